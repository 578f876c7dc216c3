#include "server/request_reader.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <fmt/format.h>

#include <vector>

namespace pagoda::server {
namespace {

namespace http = boost::beast::http;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

RequestReader::RequestReader(const RequestLimits& limits) : limits_(limits) {
  parser_.emplace();
  parser_->eager(false);  // stop after the header, so its size is known and it is checked before the body
  parser_->header_limit(uint32_t(std::min<size_t>(limits.header_bytes, UINT32_MAX)));
  parser_->body_limit(limits.body_bytes);
}

void RequestReader::fail(int status, std::string message) {
  state_ = State::failed;
  error_status_ = status;
  error_ = std::move(message);
}

size_t RequestReader::feed(std::string_view bytes) {
  size_t used = 0;
  try {
    while (state_ == State::need_more) {
      boost::system::error_code ec;
      const size_t n = parser_->put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      consumed_ += n;
      if (ec == http::error::need_more) break;
      if (ec == http::error::header_limit) {
        fail(431, fmt::format("the request line and headers exceed {} bytes", limits_.header_bytes));
      } else if (ec == http::error::body_limit) {
        fail(413, fmt::format("the request body exceeds the limit of {} bytes", limits_.body_bytes));
      } else if (ec) {
        fail(400, fmt::format("malformed HTTP request: {}", ec.message()));
      } else if (!header_checked_ && consumed_ > limits_.header_bytes) {
        // Beast checks its header limit per buffer it is given: a header fed
        // in small pieces can pass it. Counted here, whatever the pieces.
        fail(431, fmt::format("the request line and headers exceed {} bytes", limits_.header_bytes));
      } else if (!header_checked_ && parser_->is_header_done()) {
        header_size_ = consumed_;
        if (!check_header()) break;
      }
      if (state_ == State::need_more && parser_->is_done()) state_ = State::done;
      if (n == 0 && state_ == State::need_more && used == bytes.size()) break;
    }
  } catch (const std::exception& e) {
    // Beast throws on a field over 64 KiB (possible in trailers) and on
    // allocation failures: the request is refused, the server lives.
    fail(400, fmt::format("malformed HTTP request: {}", e.what()));
  }
  if (state_ == State::need_more && header_checked_) check_framing(bytes.size() - used);
  return used;
}

bool RequestReader::check_header() {
  header_checked_ = true;
  const auto& req = parser_->get();
  std::vector<std::string_view> codings;
  const auto [first, last] = req.equal_range(http::field::transfer_encoding);
  for (auto f = first; f != last; ++f) {
    std::string_view list(f->value().data(), f->value().size());
    for (;;) {
      const size_t comma = list.find(',');
      codings.push_back(trim(list.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  if (codings.empty()) return true;
  // RFC 9112 6.3: a request whose framing the server cannot be sure of is
  // answered 400 and the connection closed.
  if (req.version() < 11) {
    fail(400, "Transfer-Encoding is not allowed in an HTTP/1.0 request");
  } else if (codings.size() != 1 || !boost::beast::iequals(codings[0], "chunked")) {
    std::string all;
    for (auto c : codings) all += (all.empty() ? "" : ", ") + std::string(c);
    fail(400, fmt::format("unsupported Transfer-Encoding '{}': only 'chunked' is accepted", all));
  } else if (req.find(http::field::content_length) != req.end()) {
    fail(400, "a request may not carry both Transfer-Encoding and Content-Length");
  }
  return state_ != State::failed;
}

// Bytes after the header that are not body data: chunk-size lines, chunk
// extensions, trailers and CRLFs, parsed or still waiting in the input (the
// parser needs a whole chunk line or trailer section before it consumes it).
void RequestReader::check_framing(size_t unread) {
  const size_t body = parser_->get().body().size();
  const size_t framing = consumed_ - header_size_ - body + unread;
  if (framing > limits_.framing_bytes)
    fail(413, fmt::format("the request's chunk framing (sizes, extensions, trailers) exceeds {} bytes",
                          limits_.framing_bytes));
}

bool RequestReader::expects_continue() const {
  if (!header_checked_ || state_ != State::need_more) return false;
  const auto& req = parser_->get();
  const auto it = req.find(http::field::expect);
  return it != req.end() && boost::beast::iequals(it->value(), "100-continue");
}

RequestReader::Request RequestReader::release() { return parser_->release(); }

std::string_view RequestReader::target() const {
  if (!parser_) return {};  // Beast sets the target once the request line is parsed
  const auto t = parser_->get().target();
  return {t.data(), t.size()};
}

}  // namespace pagoda::server
