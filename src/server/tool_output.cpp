#include "server/tool_output.h"

#include <algorithm>

#include "server/tool_constraint.h"

namespace pagoda::server {
namespace {

json call_delta_json(const toolcall::CallDelta& d) {
  json call = {{"index", d.index}};
  if (!d.id.empty()) {
    call["id"] = d.id;
    call["type"] = "function";
    call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
  } else {
    call["function"] = {{"arguments", d.arguments}};
  }
  return {{"tool_calls", json::array({call})}};
}

// A message that made calls and stopped by itself finishes with "tool_calls",
// except under a named tool_choice, which finishes with "stop" (as OpenAI).
bool finishes_with_tool_calls(const ToolRequest& r, FinishReason finish) {
  return finish == FinishReason::stop && r.choice != ToolChoice::named;
}

}  // namespace

bool tool_output_active(const ToolRequest& r) {
  return tool_choice_forced(r) || (r.parser && !r.tools.is_null()) || r.harmony || r.reasoning;
}

bool tool_choice_forced(const ToolRequest& r) {
  return r.choice == ToolChoice::required || r.choice == ToolChoice::named;
}

ToolOutput::ToolOutput(const ToolRequest& r) : req_(r) {
  using toolcall::ToolCallParser;
  if (r.reasoning) think_ = std::make_unique<toolcall::ThinkSplitter>(*r.reasoning, r.think_start);
  // Forced in the model's format, or auto: the format's own parser. Forced
  // in the plain form: the arguments object or the array of calls, streamed
  // as they arrive (as vLLM streams them); cut off by max_tokens a committed
  // call stays a call.
  const toolcall::Format ids = r.parser.value_or(toolcall::Format::hermes);
  if (r.parser && (!tool_choice_forced(r) || forced_in_model_format(r)))
    parser_ = std::make_unique<ToolCallParser>(*r.parser);
  else if (r.choice == ToolChoice::named)
    parser_ = std::make_unique<ToolCallParser>(ToolCallParser::for_function(ids, r.function));
  else if (r.choice == ToolChoice::required)
    parser_ = std::make_unique<ToolCallParser>(ToolCallParser::for_array(ids));
  else if (r.harmony)  // no tools, or tool_choice none: reasoning apart, calls are content
    parser_ = std::make_unique<ToolCallParser>(ToolCallParser::harmony(false));
}

// parallel_tool_calls false: the first call only, later ones dropped (as vLLM).
toolcall::ParseStep ToolOutput::first_call_only(toolcall::ParseStep step) const {
  if (!req_.parallel) std::erase_if(step.calls, [](const toolcall::CallDelta& d) { return d.index > 0; });
  return step;
}

toolcall::ParseStep ToolOutput::content(std::string_view text, bool last) {
  if (!parser_) {
    toolcall::ParseStep step;
    step.content = text;
    return step;
  }
  toolcall::ParseStep step = parser_->push(text);
  if (last) {
    toolcall::ParseStep tail = parser_->finish();
    // A forced choice's output is calls only: what the parser held back at
    // the end is a call's markup cut off by max_tokens, never content.
    if (!tool_choice_forced(req_)) step.content += tail.content;
    step.reasoning += tail.reasoning;
    step.calls.insert(step.calls.end(), tail.calls.begin(), tail.calls.end());
  }
  return first_call_only(std::move(step));
}

toolcall::ParseStep ToolOutput::push(std::string_view text) {
  if (!think_) return content(text, false);
  toolcall::SplitStep split = think_->push(text);
  toolcall::ParseStep step = content(split.content, false);
  step.reasoning.insert(0, split.reasoning);
  return step;
}

toolcall::ParseStep ToolOutput::finish() {
  if (!think_) return parser_ ? content("", true) : toolcall::ParseStep{};
  toolcall::SplitStep split = think_->finish();
  toolcall::ParseStep step = content(split.content, true);
  step.reasoning.insert(0, split.reasoning);
  return step;
}

void tool_message(const ToolRequest& r, const ChoiceState& c, json& message, json& finish) {
  ToolOutput out(r);
  std::string content, reasoning;
  std::vector<toolcall::ToolCall> calls;
  for (auto step : {out.push(c.text), out.finish()}) {
    content += step.content;
    reasoning += step.reasoning;
    toolcall::apply_deltas(calls, step.calls);
  }
  if (r.harmony || r.reasoning) {
    // As vLLM answers a reasoning model: null where the model said nothing.
    message["content"] = content.empty() ? json(nullptr) : json(content);
    const json thought = reasoning.empty() ? json(nullptr) : json(reasoning);
    message["reasoning_content"] = thought;
    message["reasoning"] = thought;
  }
  if (calls.empty()) return;
  message["content"] = content.empty() ? json(nullptr) : json(content);
  json arr = json::array();
  for (const auto& call : calls)
    arr.push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  message["tool_calls"] = std::move(arr);
  if (finishes_with_tool_calls(r, c.finish)) finish = "tool_calls";
}

std::vector<json> tool_stream_chunks(const ResponseIdentity& id, const GenerationRequest& req, int index,
                                     ChoiceState& c, const RequestOutput& out, json logprobs) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req.tools);
  std::vector<json> chunks;
  auto send = [&](toolcall::ParseStep step) {
    // Reasoning under both names vLLM has used: reasoning_content, and reasoning.
    if (!step.reasoning.empty())
      chunks.push_back(chat_chunk(id, req, index,
                                  {{"reasoning_content", step.reasoning}, {"reasoning", step.reasoning}},
                                  std::exchange(logprobs, nullptr), nullptr));
    if (!step.content.empty() || !logprobs.is_null())
      chunks.push_back(
          chat_chunk(id, req, index, {{"content", step.content}}, std::exchange(logprobs, nullptr), nullptr));
    for (const auto& d : step.calls) chunks.push_back(chat_chunk(id, req, index, call_delta_json(d), nullptr, nullptr));
    c.tool_calls += std::count_if(step.calls.begin(), step.calls.end(), [](const auto& d) { return !d.id.empty(); });
  };
  if (!out.text.empty()) send(c.tool_output->push(out.text));
  if (out.finish == FinishReason::stop || out.finish == FinishReason::length) {
    send(c.tool_output->finish());
    json fin = c.tool_calls > 0 && finishes_with_tool_calls(req.tools, out.finish) ? json("tool_calls")
                                                                                   : finish_reason_json(out.finish);
    chunks.push_back(chat_chunk(id, req, index, json::object(), nullptr, std::move(fin), c.stop_reason));
  } else if (!logprobs.is_null()) {
    send({});
  }
  return chunks;
}

}  // namespace pagoda::server
