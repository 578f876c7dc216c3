// One client connection, driven entirely by asynchronous operations on its
// own strand (no thread per connection). It reads a request (RequestReader:
// every byte within a limit; the headers within --header-timeout of their
// first byte, the body never idle for --body-timeout), answers it, and reads
// the next (keep-alive, pipelining). While a request is answered it keeps one
// read posted on the socket without writing to it: if that read ends in EOF
// or a reset, the client is gone and the engine request is cancelled. Writes
// go through one queue; a client that accepts no bytes for --write-timeout is
// dropped the same way. Generation requests are parsed and tokenized on the
// request workers, never on the I/O thread.
//
// Engine deltas arrive on the engine thread; the request's sink only posts
// them to this connection's strand (it never blocks) and reports the client
// gone once it is.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <memory>
#include <optional>
#include <string>

#include "server/http_response.h"
#include "server/request_reader.h"
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
  // Shutdown past its deadline: a pending generation ends now with `message`
  // (503, or an error event on a stream).
  void abort_generation(const std::string& message);

 private:
  static constexpr size_t kMaxPipelined = 1 << 20;  // bytes read ahead while a request is pending
  static constexpr size_t kReadSize = 16 << 10;
  enum class Phase { reading, handling, lingering, closed };
  // What the read timer guards: the wait for a request, its headers, its body.
  enum class ReadStage { idle, header, body };

  // Reading requests.
  void begin_reading();
  void parse_request();
  void read_some();
  void on_read(error_code ec, size_t n);
  void arm_read_timer();
  void on_request();
  void refuse(int status, std::string message);  // answer, then close
  // Answering.
  void route(RequestReader::Request& req);
  void respond(int status, std::string_view content_type, std::string_view body, const Headers& extra = {});
  void respond_error(const ApiError& e);
  void respond_json(int status, const std::string& body) { respond(status, "application/json", body); }
  void health(std::string_view query);
  void health_generate(const ServedModel& m);
  void metrics();
  void models(std::string_view target);
  // Generations (generation.cpp).
  void start_generation(bool chat, std::string body);
  void submit_generation(uint64_t exchange, std::shared_ptr<Generation> g, const ApiError* error);
  void on_output(const std::shared_ptr<Generation>& g, RequestOutput&& out);
  void stream_delta(Generation& g, const RequestOutput& out);
  void stream_head(Generation& g);
  void finish_generation(Generation& g);
  void fail_generation(Generation& g, int status, const std::string& message);
  void retire(Generation& g, bool client_gone);
  // Writing.
  void send(std::string bytes);
  void write_some();
  void on_written(error_code ec, size_t n);
  void response_complete();  // the exchange's last bytes are queued
  void after_drained();
  void linger_close();
  void close();

  tcp::socket socket_;
  std::shared_ptr<ServerState> state_;
  boost::beast::flat_buffer buffer_;  // bytes read and not yet parsed
  // A read lands here, never in buffer_: the parser consumes buffer_ while a
  // read is pending, and an emptied flat_buffer moves its write position.
  std::unique_ptr<char[]> chunk_ = std::make_unique<char[]>(kReadSize);
  std::optional<RequestReader> reader_;
  asio::steady_timer read_timer_, write_timer_;
  Phase phase_ = Phase::reading;
  ReadStage read_stage_ = ReadStage::idle;
  bool continue_sent_ = false;  // `100 Continue` answered to this request's Expect
  bool parsing_ = false;        // a generation request is being parsed (on the workers) and not yet submitted
  uint64_t exchange_ = 0;       // counts requests, so a late parse result finds its own
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
