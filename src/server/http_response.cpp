#include "server/http_response.h"

#include <boost/beast/http/status.hpp>
#include <fmt/format.h>

namespace pagoda::server {
namespace {

std::string status_line(int status) {
  const auto reason = boost::beast::http::obsolete_reason(boost::beast::http::int_to_status(unsigned(status)));
  return fmt::format("HTTP/1.1 {} {}\r\n", status, std::string_view(reason.data(), reason.size()));
}

void append_headers(std::string& out, bool keep_alive, const Headers& extra) {
  out += "Server: pagoda\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : extra) out += fmt::format("{}: {}\r\n", k, v);
}

}  // namespace

std::string http_response(int status, std::string_view content_type, std::string_view body, bool keep_alive,
                          const Headers& extra) {
  std::string out = status_line(status);
  if (status != 204)  // RFC 9110 8.6: a 204 has no body and says no length
    out += fmt::format("Content-Type: {}\r\nContent-Length: {}\r\n", content_type, body.size());
  append_headers(out, keep_alive, extra);
  out += "\r\n";
  out += body;
  return out;
}

std::string sse_head(bool keep_alive, bool chunked, const Headers& extra) {
  std::string out = status_line(200);
  out += "Content-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n";
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  append_headers(out, keep_alive && chunked, extra);
  out += "\r\n";
  return out;
}

std::string sse_event(std::string_view payload, bool chunked, std::string_view name) {
  const std::string head = name.empty() ? "" : fmt::format("event: {}\n", name);
  const size_t n = head.size() + payload.size() + 8;  // "data: " + "\n\n"
  std::string out;
  if (chunked) out = fmt::format("{:x}\r\n", n);
  out += head;
  out += "data: ";
  out += payload;
  out += "\n\n";
  if (chunked) out += "\r\n";
  return out;
}

}  // namespace pagoda::server
