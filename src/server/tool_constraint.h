// Forced tool calls: tool_choice "required" or a named function constrains
// the output with the grammar library to JSON a call can be read from, as
// vLLM does: a named function's arguments object (its `parameters` JSON
// Schema), or for "required" an array of {"name": one of the tools,
// "parameters": that tool's schema}, one element unless parallel_tool_calls.
// tool_output.h reads the result. A bad `parameters` schema is a 400 naming
// `tools`.
#pragma once

#include <memory>

#include "grammar/cache.h"
#include "server/constraint_fields.h"
#include "server/tool_fields.h"

namespace pagoda::server {

// The JSON Schema a forced choice's output must match (exposed for tests).
nlohmann::ordered_json forced_tool_schema(const ToolRequest& r);

// Null unless the choice is forced.
std::shared_ptr<const grammar::MaskTables> forced_tool_constraint(const ToolRequest& r, const GrammarSupport& support);

}  // namespace pagoda::server
