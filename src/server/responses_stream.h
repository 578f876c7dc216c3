// The Responses API's stream events for one /v1/responses generation, in
// OpenAI's order, each a JSON object whose "type" is the SSE event name and
// which carries a sequence_number counting from 0:
//
//   response.created, response.in_progress (the response, status in_progress, output [])
//   per output item: response.output_item.added, then by kind
//     message:       response.content_part.added, response.output_text.delta*,
//                    response.output_text.done, response.content_part.done
//     reasoning:     response.content_part.added (reasoning_text), response.reasoning_text.delta*,
//                    response.reasoning_text.done, response.content_part.done
//     function_call: response.function_call_arguments.delta*, response.function_call_arguments.done
//   and response.output_item.done (the whole item)
//   response.completed (or response.incomplete when cut by max_output_tokens)
//   with the whole response; response.failed on an engine error. No [DONE].
//
// The engine's text goes through the same ToolOutput as a chat stream
// (reasoning apart, calls parsed); a change of kind closes the open item and
// opens the next. A non-streaming response is this stream's last response
// (responses_response), so the two cannot disagree.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/openai_response.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

class ResponsesStream {
 public:
  ResponsesStream(const ResponseIdentity& id, const GenerationRequest& req);

  std::vector<json> start();  // response.created, response.in_progress
  // The events for one engine output (text so far; not its finish).
  std::vector<json> push(ChoiceState& c, const RequestOutput& out);
  // The closing events once the choice finished: the last item's, then response.completed or .incomplete.
  std::vector<json> finish(ChoiceState& c, const Usage& usage);
  json failed(const std::string& message);            // response.failed
  const json& response() const { return response_; }  // the whole response, once finished

 private:
  enum class Item { none, reasoning, message, function_call };
  json event(const char* type, json fields);
  void step(const toolcall::ParseStep& s, std::vector<json>& events);
  void open(Item kind, json item, std::vector<json>& events);
  void close(std::vector<json>& events, const char* status = "completed");

  const ResponseIdentity& id_;
  const GenerationRequest& req_;
  json response_;  // the response object as it stands
  Item open_ = Item::none;
  json item_;         // the open item
  std::string text_;  // its text or arguments so far
  int64_t seq_ = 0;   // the next event's sequence_number
};

// The whole response of a non-streaming request.
json responses_response(const ResponseIdentity& id, const GenerationRequest& req, const ChoiceState& c,
                        const Usage& usage);

}  // namespace pagoda::server
