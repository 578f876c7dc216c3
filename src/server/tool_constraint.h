// Forced tool calls: tool_choice "required" or a named function constrains
// the output with the grammar library so it always parses as calls.
//
// In the model's own format (issue 21) when the request's tool-call format
// is hermes, llama3_json, mistral, deepseek_v3 or harmony: that format's markup
// (toolcall's call_markup) around each call, the name one of the tools (or
// the named one) and the arguments object matching that tool's `parameters`
// schema (compact JSON); one call, or one or more joined the format's way
// when "required" and parallel_tool_calls. The format's ordinary parser then
// reads it (tool_output.h).
//
// Otherwise (pythonic, no format known) vLLM's plain JSON: a named
// function's arguments object, or for "required" an array of {"name": one
// of the tools, "parameters": that tool's schema}, one element unless
// parallel_tool_calls.
//
// A bad `parameters` schema is a 400 naming `tools`; unsupported schema
// keywords are ignored, as for guided_json.
#pragma once

#include <memory>

#include "grammar/cache.h"
#include "server/constraint_fields.h"
#include "server/tool_fields.h"

namespace pagoda::server {

// Whether a forced choice is written in the model's own format.
bool forced_in_model_format(const ToolRequest& r);

// The plain form's JSON Schema (exposed for tests).
nlohmann::ordered_json forced_tool_schema(const ToolRequest& r);

// The constraint a forced choice compiles (exposed for tests): a tagged
// grammar in the model's format, else the plain form's JSON Schema.
grammar::ConstraintSpec forced_tool_spec(const ToolRequest& r);

// Null unless the choice is forced.
std::shared_ptr<const grammar::MaskTables> forced_tool_constraint(const ToolRequest& r, const GrammarSupport& support);

}  // namespace pagoda::server
