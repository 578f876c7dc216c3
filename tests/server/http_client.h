// A small synchronous HTTP/1.1 client over loopback (Boost.Beast) for the
// server tests: whole requests and responses, streams read piece by piece,
// and the rude moves (half-close, reset, raw bytes) the tests need.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::testing {

using Headers = std::map<std::string, std::string>;

struct HttpResponse {
  int status = 0;
  Headers headers;  // lower-case names
  std::string body;
  nlohmann::json json() const;  // the body parsed (throws on invalid JSON)
  std::string header(const std::string& lower_name) const;
};

class HttpConnection {
 public:
  // rcvbuf > 0: a small receive buffer (set before connecting), to stall the server's writes.
  explicit HttpConnection(uint16_t port, int rcvbuf = 0);
  ~HttpConnection();

  HttpResponse request(const std::string& method, const std::string& target, const std::string& body = "",
                       const Headers& headers = {});
  void send(const std::string& method, const std::string& target, const std::string& body = "",
            const Headers& headers = {});
  void write_raw(const std::string& bytes);
  HttpResponse read_response();

  // Streams: the head, then body bytes as they come ("" at the end).
  HttpResponse read_head();
  std::string read_body_some();
  // SSE data payloads until [DONE] (included) or the end of the body.
  std::vector<std::string> read_events(size_t max_events = SIZE_MAX);

  void shutdown_write();  // half-close: EOF for the server
  void reset();           // close with SO_LINGER 0: the server sees a reset
  void close();
  // Whether the server closed the connection (EOF) within the timeout.
  bool peer_closed_within(std::chrono::milliseconds timeout);
  boost::asio::ip::tcp::socket& socket() { return socket_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  std::string pending_;  // SSE bytes not yet split into events
  // The last request sent was HEAD: its response has a head alone.
  bool head_sent_ = false;
};

HttpResponse http_get(uint16_t port, const std::string& target, const Headers& headers = {});
HttpResponse http_post(uint16_t port, const std::string& target, const nlohmann::json& body,
                       const Headers& headers = {});
HttpResponse http_post_raw(uint16_t port, const std::string& target, const std::string& body,
                           const Headers& headers = {});

// The data payloads of an SSE body ("data: X\n\n" -> X).
std::vector<std::string> sse_payloads(const std::string& body);

}  // namespace pagoda::testing
