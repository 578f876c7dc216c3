// How an exchange answers its client, whatever carries the bytes: one whole
// response, or an event stream (Server-Sent Events). Connection implements
// it over HTTP/1.x; a generation (GenerationStream) only says what to send.
// Every call comes on the connection's strand. After respond(),
// respond_error() or end_events() the exchange is over: the channel may
// detach the caller before the call returns.
#pragma once

#include <cstddef>
#include <string_view>

#include "server/http_response.h"

namespace pagoda::server {

struct ApiError;

class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  virtual void respond(int status, std::string_view content_type, std::string_view body, const Headers& extra = {}) = 0;
  virtual void respond_error(const ApiError& e) = 0;    // an OpenAI-style error body
  virtual void begin_events(const Headers& extra) = 0;  // status 200 and the stream's head
  virtual void send_event(std::string_view data) = 0;   // one `data:` event
  // One event with an `event:` line (Anthropic's streams name each event).
  virtual void send_named_event(std::string_view name, std::string_view data) = 0;
  virtual void end_events() = 0;                     // the stream's end
  virtual size_t queued_bytes() const { return 0; }  // accepted, not yet written: a slow reader
};

}  // namespace pagoda::server
