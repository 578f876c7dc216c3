// A chat choice's output when the request has tools: content and tool calls,
// whole (a non-streaming message) or as stream chunks, the way OpenAI sends
// them: per call a delta with index, id, type and function.name (arguments
// ""), then function.arguments; finish_reason "tool_calls" when the choice
// stopped naturally after at least one call, except for a named function,
// where OpenAI answers "stop" (and vLLM since it matched OpenAI).
//
// With tool_choice auto the model's text goes through the served model's
// tool-call parser (toolcall/). A forced choice (required or a named
// function) was constrained (tool_constraint.h): in the model's own format,
// read by that same parser; else to vLLM's plain JSON, read by toolcall's
// for_function (a named function's arguments object) or for_array
// (`required`'s array of {"name", "parameters"}). Every form streams: a
// call's id and name once its head is read, then its arguments in pieces;
// cut off by max_tokens a committed call stays a call with the arguments so
// far. A forced choice that ended with "stop" is calls by construction.
//
// A model that writes harmony (gpt-oss) is read with or without tools: its
// analysis channel becomes `reasoning_content` (and, beside it, vLLM's newer
// name `reasoning`), streamed as deltas of its own; with calls off its call
// messages are content. Its message has content, reasoning_content and
// reasoning set, null where the model wrote none.
//
// A model that thinks in <think> tags (a reasoning parser, toolcall/think.h)
// is split first: the reasoning goes out as harmony's does, and only the
// content after </think> reaches the tool-call parser (a call written while
// thinking is thought, not a call).
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
  toolcall::ParseStep content(std::string_view text, bool last);  // the part after the reasoning

  const ToolRequest& req_;
  std::unique_ptr<toolcall::ThinkSplitter> think_;    // null: no <think> reasoning
  std::unique_ptr<toolcall::ToolCallParser> parser_;  // null: the output is content
};

// Non-streaming: `message` gets content (null when only calls) and
// tool_calls; `finish` becomes "tool_calls".
void tool_message(const ToolRequest& r, const ChoiceState& c, json& message, json& finish);

// Streaming: the chunks for one engine output of choice `index` (content,
// call deltas, and the finish chunk when the choice ended naturally).
std::vector<json> tool_stream_chunks(const ResponseIdentity& id, const GenerationRequest& req, int index,
                                     ChoiceState& c, const RequestOutput& out, json logprobs);

}  // namespace pagoda::server
