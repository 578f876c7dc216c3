// Reads one HTTP/1.1 request from bytes as they arrive, with every byte of it
// counted against an explicit limit (Beast parses; this class decides):
//
//   request line + headers          <= header_bytes    else 431
//   body data                       <= body_bytes      else 413
//   chunk framing: size lines, chunk
//   extensions, trailers, CRLFs     <= framing_bytes   else 413
//
// and Transfer-Encoding per RFC 9112: only `chunked` alone is accepted;
// anything else (`chunked, identity`, `gzip`, `xchunked`, chunked with
// Content-Length, chunked on HTTP/1.0) is 400, so that no body can be read as
// a second request (smuggling). A failed request is answered and the
// connection closed. No input makes it throw. Pure: no socket, no clock, so
// the fuzz target drives it byte by byte.
#pragma once

// GCC 12 with the sanitizers sees a boost::optional in Beast's parser as
// maybe uninitialized (a false positive inside Boost).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/http/parser.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::server {

struct RequestLimits {
  size_t header_bytes = 16 << 10;
  size_t body_bytes = 8 << 20;
  size_t framing_bytes = 64 << 10;
};

class RequestReader {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  enum class State { need_more, done, failed };

  explicit RequestReader(const RequestLimits& limits);

  // Parses what it can of `bytes` (the unread input, from the start of this
  // request on) and returns how many bytes it consumed. After `done`, what is
  // left belongs to the next request.
  size_t feed(std::string_view bytes);

  State state() const { return state_; }
  bool header_done() const { return header_checked_; }
  bool expects_continue() const;  // `Expect: 100-continue` and the body still to come
  // The request target once the request line is parsed ("" before): a refusal's body shape depends on the route.
  std::string_view target() const;
  // The failure's status (400, 413, 431) and message.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }
  // The request, once done.
  Request release();

 private:
  void fail(int status, std::string message);
  bool check_header();  // false: failed
  void check_framing(size_t unread);

  RequestLimits limits_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  State state_ = State::need_more;
  bool header_checked_ = false;
  size_t header_size_ = 0;  // bytes of the request line and headers
  size_t consumed_ = 0;     // bytes of this request parsed so far
  int error_status_ = 0;
  std::string error_;
};

}  // namespace pagoda::server
