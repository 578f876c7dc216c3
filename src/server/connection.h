// One client connection, driven entirely by asynchronous operations on its
// own strand (no thread per connection). It reads a request, answers it, and
// reads the next (keep-alive, pipelining). While a generation is pending it
// keeps one read posted on the socket without writing to it: if that read
// ends in EOF or a reset, the client is gone and the engine request is
// cancelled. Writes go through one queue; a client that accepts no bytes for
// --write-timeout is dropped the same way.
//
// Engine deltas arrive on the engine thread; the request's sink only posts
// them to this connection's strand (it never blocks) and reports the client
// gone once it is.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
// GCC 12 with the sanitizers sees a boost::optional in Beast's parser as
// maybe uninitialized (a false positive inside Boost).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <boost/beast/http/string_body.hpp>

#include <memory>
#include <optional>
#include <string>

#include "server/http_response.h"
#include "server/server_state.h"

namespace pagoda::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

struct Generation;
struct ApiError;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The socket's executor must be a strand.
  Connection(tcp::socket socket, std::shared_ptr<ServerState> state);
  ~Connection();

  void start();
  // Shutdown: close now if between requests; otherwise after this response.
  void drain();

 private:
  static constexpr size_t kMaxPipelined = 1 << 20;  // bytes read ahead while a request is pending
  enum class Phase { reading, handling, lingering, closed };

  // Reading requests.
  void begin_reading();
  void read_request();
  void on_header(error_code ec);
  void on_request(error_code ec);
  void read_failed(error_code ec);
  void arm_idle_timer();
  // Answering.
  void handle(http::request<http::string_body>& req);
  void route(http::request<http::string_body>& req);
  void respond(int status, std::string_view content_type, std::string_view body, const Headers& extra = {});
  void respond_error(const ApiError& e);
  void respond_json(int status, const std::string& body) { respond(status, "application/json", body); }
  void health();
  void metrics();
  void models(std::string_view target);
  // Generations (generation.cpp).
  void start_generation(bool chat, const std::string& body);
  void on_output(const std::shared_ptr<Generation>& g, RequestOutput&& out);
  void stream_delta(Generation& g, const RequestOutput& out);
  void stream_head(Generation& g);
  void finish_generation(Generation& g);
  void fail_generation(Generation& g, int status, const std::string& message);
  void retire(Generation& g, bool client_gone);
  void watch_socket();
  void on_watch(error_code ec, size_t n);
  // Writing.
  void send(std::string bytes);
  void write_some();
  void on_written(error_code ec, size_t n);
  void response_complete();  // the exchange's last bytes are queued
  void after_drained();
  void linger_close();
  void linger_read();
  void close();

  tcp::socket socket_;
  std::shared_ptr<ServerState> state_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  asio::steady_timer idle_timer_, write_timer_;
  Phase phase_ = Phase::reading;
  bool reading_ = false;       // a read is posted on the socket
  bool keep_alive_ = true;     // of the current exchange
  bool http11_ = true;
  bool complete_ = false;      // the current response is fully queued
  bool close_after_ = false;   // close once the response is written
  bool linger_ = false;        // ... after draining what the client still sends
  std::string out_, writing_;  // queued bytes; bytes being written
  size_t written_ = 0;
  size_t lingered_ = 0;  // bytes discarded by a lingering close
  bool write_in_flight_ = false;
  std::shared_ptr<Generation> active_;
};

}  // namespace pagoda::server
