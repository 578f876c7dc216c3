#include "server/anthropic_stream.h"

#include "server/anthropic_messages.h"
#include "server/tool_output.h"

namespace pagoda::server {

MessagesStream::MessagesStream(const ResponseIdentity& id, const GenerationRequest& req) : id_(id), req_(req) {}

json MessagesStream::start(int64_t input_tokens) const {
  return {{"type", "message_start"},
          {"message",
           {{"id", id_.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", id_.model},
            {"content", json::array()},
            {"stop_reason", nullptr},
            {"stop_sequence", nullptr},
            {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 0}}}}}};
}

void MessagesStream::close(std::vector<json>& events) {
  if (open_ == Block::none) return;
  events.push_back({{"type", "content_block_stop"}, {"index", index_}});
  open_ = Block::none;
}

void MessagesStream::open(Block kind, json block, std::vector<json>& events) {
  close(events);
  open_ = kind;
  events.push_back({{"type", "content_block_start"}, {"index", ++index_}, {"content_block", std::move(block)}});
}

void MessagesStream::step(const toolcall::ParseStep& s, std::vector<json>& events) {
  auto delta = [&](json d) { events.push_back({{"type", "content_block_delta"}, {"index", index_}, {"delta", d}}); };
  // Reasoning is dropped unless thinking was enabled, as Anthropic omits it.
  if (!s.reasoning.empty() && req_.thinking) {
    if (open_ != Block::thinking)
      open(Block::thinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, events);
    delta({{"type", "thinking_delta"}, {"thinking", s.reasoning}});
  }
  if (!s.content.empty()) {
    if (open_ != Block::text) open(Block::text, {{"type", "text"}, {"text", ""}}, events);
    delta({{"type", "text_delta"}, {"text", s.content}});
  }
  for (const auto& d : s.calls) {
    if (!d.id.empty()) {  // a new call: its head, then its arguments in pieces
      made_calls_ = true;
      open(Block::tool_use,
           {{"type", "tool_use"}, {"id", anthropic_tool_id(d.id)}, {"name", d.name}, {"input", json::object()}},
           events);
    }
    if (!d.arguments.empty() && open_ == Block::tool_use)
      delta({{"type", "input_json_delta"}, {"partial_json", d.arguments}});
  }
}

std::vector<json> MessagesStream::push(ChoiceState& c, const RequestOutput& out) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req_.tools);
  std::vector<json> events;
  if (!out.text.empty()) step(c.tool_output->push(out.text), events);
  return events;
}

std::vector<json> MessagesStream::finish(ChoiceState& c, const Usage& usage) {
  if (!c.tool_output) c.tool_output = std::make_shared<ToolOutput>(req_.tools);
  std::vector<json> events;
  step(c.tool_output->finish(), events);
  close(events);
  const StopInfo stop = anthropic_stop(c, made_calls_);
  events.push_back({{"type", "message_delta"},
                    {"delta", {{"stop_reason", stop.reason}, {"stop_sequence", stop.sequence}}},
                    {"usage", {{"output_tokens", usage.completion_tokens}}}});
  events.push_back({{"type", "message_stop"}});
  return events;
}

}  // namespace pagoda::server
