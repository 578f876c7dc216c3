#include "server/responses_stream.h"

#include "server/responses_output.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace {

json message_item() {
  return {{"id", responses_id("msg_")},
          {"type", "message"},
          {"status", "in_progress"},
          {"role", "assistant"},
          {"content", json::array()}};
}

}  // namespace

ResponsesStream::ResponsesStream(const ResponseIdentity& id, const GenerationRequest& req)
    : id_(id), req_(req), response_(response_object(id, req, "in_progress", json::array(), nullptr)) {}

json ResponsesStream::event(const char* type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = seq_++;
  return fields;
}

std::vector<json> ResponsesStream::start() {
  return {event("response.created", {{"response", response_}}),
          event("response.in_progress", {{"response", response_}})};
}

void ResponsesStream::open(Item kind, json item, std::vector<json>& events) {
  close(events);
  open_ = kind;
  item_ = std::move(item);
  text_.clear();
  const size_t index = response_["output"].size();
  events.push_back(event("response.output_item.added", {{"output_index", index}, {"item", item_}}));
  const json part = kind == Item::message ? json{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}
                    : kind == Item::reasoning ? json{{"type", "reasoning_text"}, {"text", ""}}
                                              : json(nullptr);
  if (!part.is_null())
    events.push_back(event("response.content_part.added",
                           {{"item_id", item_["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}}));
}

void ResponsesStream::close(std::vector<json>& events, const char* status) {
  if (open_ == Item::none) return;
  const size_t index = response_["output"].size();
  const json where = {{"item_id", item_["id"]}, {"output_index", index}};
  auto with = [&](json fields) {
    fields.update(where);
    return fields;
  };
  if (open_ == Item::message) {
    const json part = {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}};
    events.push_back(
        event("response.output_text.done", with({{"content_index", 0}, {"text", text_}, {"logprobs", json::array()}})));
    events.push_back(event("response.content_part.done", with({{"content_index", 0}, {"part", part}})));
    item_["content"] = json::array({part});
    item_["status"] = status;
  } else if (open_ == Item::reasoning) {
    const json part = {{"type", "reasoning_text"}, {"text", text_}};
    events.push_back(event("response.reasoning_text.done", with({{"content_index", 0}, {"text", text_}})));
    events.push_back(event("response.content_part.done", with({{"content_index", 0}, {"part", part}})));
    item_["content"] = json::array({part});
  } else {
    events.push_back(
        event("response.function_call_arguments.done", with({{"name", item_["name"]}, {"arguments", text_}})));
    item_["arguments"] = text_;
    item_["status"] = status;  // cut by max_output_tokens: the call stays, its arguments incomplete (tool_output.h)
  }
  events.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item_}}));
  response_["output"].push_back(std::move(item_));
  item_ = nullptr;
  open_ = Item::none;
}

void ResponsesStream::step(const toolcall::ParseStep& s, std::vector<json>& events) {
  auto delta = [&](const char* type, const std::string& piece, bool content_index) {
    json fields = {{"item_id", item_["id"]}, {"output_index", response_["output"].size()}, {"delta", piece}};
    if (content_index) fields["content_index"] = 0;
    if (open_ == Item::message) fields["logprobs"] = json::array();
    text_ += piece;
    events.push_back(event(type, std::move(fields)));
  };
  if (!s.reasoning.empty()) {
    if (open_ != Item::reasoning)
      open(Item::reasoning,
           {{"id", responses_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()}, {"content", json::array()}},
           events);
    delta("response.reasoning_text.delta", s.reasoning, true);
  }
  if (!s.content.empty()) {
    if (open_ != Item::message) open(Item::message, message_item(), events);
    delta("response.output_text.delta", s.content, true);
  }
  for (const auto& d : s.calls) {
    if (!d.id.empty())  // a new call: its head, then its arguments in pieces
      open(Item::function_call,
           {{"id", responses_id("fc_")},
            {"type", "function_call"},
            {"status", "in_progress"},
            {"call_id", d.id},
            {"name", d.name},
            {"arguments", ""}},
           events);
    if (!d.arguments.empty() && open_ == Item::function_call)
      delta("response.function_call_arguments.delta", d.arguments, false);
  }
}

std::vector<json> ResponsesStream::push(ChoiceState& c, const RequestOutput& out) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req_.tools);
  std::vector<json> events;
  if (!out.text.empty()) step(c.tool_output->push(out.text), events);
  return events;
}

std::vector<json> ResponsesStream::finish(ChoiceState& c, const Usage& usage) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req_.tools);
  std::vector<json> events;
  step(c.tool_output->finish(), events);
  const bool cut = c.finish == FinishReason::length;
  if (open_ == Item::none && response_["output"].empty())  // nothing written: one empty message, output_text ""
    open(Item::message, message_item(), events);
  close(events, cut ? "incomplete" : "completed");
  const char* status = cut ? "incomplete" : "completed";
  response_ = response_object(id_, req_, status, std::move(response_["output"]), responses_usage(usage));
  events.push_back(event(cut ? "response.incomplete" : "response.completed", {{"response", response_}}));
  return events;
}

json ResponsesStream::failed(const std::string& message) {
  if (open_ == Item::message) {  // the open message as it stood
    item_["content"] = json::array({{{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}}});
    item_["status"] = "incomplete";
    response_["output"].push_back(item_);
  }
  response_["status"] = "failed";
  response_["error"] = {{"code", "server_error"}, {"message", message}};
  return event("response.failed", {{"response", response_}});
}

json responses_response(const ResponseIdentity& id, const GenerationRequest& req, const ChoiceState& c,
                        const Usage& usage) {
  ResponsesStream s(id, req);
  ChoiceState whole;
  whole.finish = c.finish;
  RequestOutput out;
  out.text = c.text;
  s.push(whole, out);
  s.finish(whole, usage);
  return s.response();
}

}  // namespace pagoda::server
