// A chat choice's output when the request has tools: content and tool calls,
// whole (a non-streaming message) or as stream chunks, the way OpenAI sends
// them: per call a delta with index, id, type and function.name (arguments
// ""), then function.arguments; finish_reason "tool_calls" when the choice
// stopped naturally after at least one call.
//
// With tool_choice auto the model's text goes through the served model's
// tool-call parser (toolcall/). A forced choice (required or a named
// function) was constrained to JSON (tool_constraint.h), as vLLM does: a
// named function's output is its arguments object, streamed in pieces as it
// arrives (toolcall's for_function; cut off by max_tokens it stays a call
// with the arguments so far); `required`'s is an array of {"name",
// "parameters"}, read whole at the end, and stays content if it does not
// parse.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/openai_response.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

// Whether the request's output is read for tool calls.
bool tool_output_active(const ToolRequest& r);
bool tool_choice_forced(const ToolRequest& r);

class ToolOutput {
 public:
  explicit ToolOutput(const ToolRequest& r);
  toolcall::ParseStep push(std::string_view text);
  toolcall::ParseStep finish();

 private:
  toolcall::ParseStep first_call_only(toolcall::ParseStep step) const;

  const ToolRequest& req_;
  std::unique_ptr<toolcall::ToolCallParser> parser_;
  std::string forced_;  // `required`'s output, read at the end
};

// Non-streaming: `message` gets content (null when only calls) and
// tool_calls; `finish` becomes "tool_calls".
void tool_message(const ToolRequest& r, const ChoiceState& c, json& message, json& finish);

// Streaming: the chunks for one engine output of choice `index` (content,
// call deltas, and the finish chunk when the choice ended naturally).
std::vector<json> tool_stream_chunks(const ResponseIdentity& id, const GenerationRequest& req, int index,
                                     ChoiceState& c, const RequestOutput& out, json logprobs);

}  // namespace pagoda::server
