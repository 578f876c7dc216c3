#include "server/tool_output.h"

#include <random>

namespace pagoda::server {
namespace {

// Mistral's templates refuse any id but 9 letters and digits.
std::string call_id(const ToolRequest& r) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view kAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bool mistral = r.parser == toolcall::Format::mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[rng() % kAlnum.size()];
  return id;
}

std::string compact(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// `required`'s JSON output -> calls; nullopt when it is not that shape (cut
// off by max_tokens, say).
std::optional<std::vector<toolcall::ToolCall>> forced_calls(const ToolRequest& r, const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  std::vector<toolcall::ToolCall> calls;
  if (!j.is_array() || j.empty()) return std::nullopt;
  for (const auto& c : j) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return std::nullopt;
    const json args = c.contains("parameters") ? c["parameters"] : json::object();
    if (!args.is_object()) return std::nullopt;
    calls.push_back({call_id(r), c["name"].get<std::string>(), compact(args)});
  }
  return calls;
}

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

}  // namespace

bool tool_output_active(const ToolRequest& r) { return tool_choice_forced(r) || (r.parser && !r.tools.is_null()); }

bool tool_choice_forced(const ToolRequest& r) {
  return r.choice == ToolChoice::required || r.choice == ToolChoice::named;
}

ToolOutput::ToolOutput(const ToolRequest& r) : req_(r) {
  // A named function: the output is its arguments object, streamed as it
  // arrives (as vLLM streams it); cut off by max_tokens it stays a call.
  const toolcall::Format ids = r.parser.value_or(toolcall::Format::hermes);
  if (r.choice == ToolChoice::named)
    parser_ = std::make_unique<toolcall::ToolCallParser>(toolcall::ToolCallParser::for_function(ids, r.function));
  else if (!tool_choice_forced(r) && r.parser)
    parser_ = std::make_unique<toolcall::ToolCallParser>(*r.parser);
}

// parallel_tool_calls false: the first call only, later ones dropped (as vLLM).
toolcall::ParseStep ToolOutput::first_call_only(toolcall::ParseStep step) const {
  if (!req_.parallel) std::erase_if(step.calls, [](const toolcall::CallDelta& d) { return d.index > 0; });
  return step;
}

toolcall::ParseStep ToolOutput::push(std::string_view text) {
  if (parser_) return first_call_only(parser_->push(text));
  if (tool_choice_forced(req_)) return forced_.append(text), toolcall::ParseStep{};
  return {std::string(text), {}};
}

toolcall::ParseStep ToolOutput::finish() {
  if (parser_) return first_call_only(parser_->finish());
  if (!tool_choice_forced(req_)) return {};
  toolcall::ParseStep step;
  const auto calls = forced_calls(req_, forced_);
  if (!calls) return {std::exchange(forced_, {}), {}};
  for (size_t i = 0; i < calls->size(); ++i) {
    const auto& c = (*calls)[i];
    step.calls.push_back({i, c.id, c.name, ""});
    step.calls.push_back({i, "", "", c.arguments});
  }
  return step;
}

void tool_message(const ToolRequest& r, const ChoiceState& c, json& message, json& finish) {
  ToolOutput out(r);
  std::string content;
  std::vector<toolcall::ToolCall> calls;
  for (auto step : {out.push(c.text), out.finish()}) {
    content += step.content;
    toolcall::apply_deltas(calls, step.calls);
  }
  if (calls.empty()) return;
  message["content"] = content.empty() ? json(nullptr) : json(content);
  json arr = json::array();
  for (const auto& call : calls)
    arr.push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  message["tool_calls"] = std::move(arr);
  if (c.finish == FinishReason::stop) finish = "tool_calls";
}

std::vector<json> tool_stream_chunks(const ResponseIdentity& id, const GenerationRequest& req, int index,
                                     ChoiceState& c, const RequestOutput& out, json logprobs) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req.tools);
  std::vector<json> chunks;
  auto send = [&](toolcall::ParseStep step) {
    if (!step.content.empty() || !logprobs.is_null())
      chunks.push_back(
          chat_chunk(id, req, index, {{"content", step.content}}, std::exchange(logprobs, nullptr), nullptr));
    for (const auto& d : step.calls) chunks.push_back(chat_chunk(id, req, index, call_delta_json(d), nullptr, nullptr));
    c.tool_calls += std::count_if(step.calls.begin(), step.calls.end(), [](const auto& d) { return !d.id.empty(); });
  };
  if (!out.text.empty()) send(c.tool_output->push(out.text));
  if (out.finish == FinishReason::stop || out.finish == FinishReason::length) {
    send(c.tool_output->finish());
    json fin =
        c.tool_calls > 0 && out.finish == FinishReason::stop ? json("tool_calls") : finish_reason_json(out.finish);
    chunks.push_back(chat_chunk(id, req, index, json::object(), nullptr, std::move(fin), c.stop_reason));
  } else if (!logprobs.is_null()) {
    send({});
  }
  return chunks;
}

}  // namespace pagoda::server
