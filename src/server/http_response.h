// The bytes of HTTP/1.1 responses as the server writes them: whole responses
// with a Content-Length, and Server-Sent Event streams (chunked on HTTP/1.1,
// delimited by closing the connection on HTTP/1.0).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::server {

using Headers = std::vector<std::pair<std::string, std::string>>;

// "HTTP/1.1 200 OK\r\n" ... headers ... "\r\n" + body.
std::string http_response(int status, std::string_view content_type, std::string_view body, bool keep_alive,
                          const Headers& extra = {});

// The head of an event stream. `chunked` on HTTP/1.1.
std::string sse_head(bool keep_alive, bool chunked, const Headers& extra = {});
// One event: "data: <payload>\n\n", framed as one chunk when chunked.
std::string sse_event(std::string_view payload, bool chunked, std::string_view name = {});  // name: an `event:` line
// The end of a chunked body.
inline std::string chunked_end() { return "0\r\n\r\n"; }

}  // namespace pagoda::server
