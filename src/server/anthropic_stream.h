// Anthropic's stream events for one /v1/messages generation, in the order
// its API sends them:
//
//   message_start (the message, content [], usage.input_tokens)
//   per block: content_block_start, content_block_delta* (thinking_delta,
//     text_delta, or input_json_delta with partial_json), content_block_stop
//   message_delta ({stop_reason, stop_sequence}, usage.output_tokens)
//   message_stop
//
// The engine's text goes through the same ToolOutput as a chat stream
// (reasoning apart, calls parsed); a change of kind closes the open block
// and opens the next. Each event is a JSON object whose "type" is the SSE
// event name.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/openai_response.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

class MessagesStream {
 public:
  MessagesStream(const ResponseIdentity& id, const GenerationRequest& req);

  json start(int64_t input_tokens) const;  // message_start
  // The events for one engine output (text so far; not its finish).
  std::vector<json> push(ChoiceState& c, const RequestOutput& out);
  // The closing events once the choice finished.
  std::vector<json> finish(ChoiceState& c, const Usage& usage);

 private:
  enum class Block { none, thinking, text, tool_use };
  void step(const toolcall::ParseStep& s, std::vector<json>& events);
  void open(Block kind, json block, std::vector<json>& events);
  void close(std::vector<json>& events);

  const ResponseIdentity& id_;
  const GenerationRequest& req_;
  Block open_ = Block::none;
  int index_ = -1;  // the open (or last) block's index
  bool made_calls_ = false;
};

}  // namespace pagoda::server
