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
// Requests are dispatched through a route table; a generation is a
// GenerationStream that answers through this connection (ResponseChannel)
// until the exchange ends or the client leaves.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/http_response.h"
#include "server/request_reader.h"
#include "server/response_channel.h"
#include "server/server_state.h"

namespace pagoda::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

class GenerationStream;

class Connection : public ResponseChannel, public std::enable_shared_from_this<Connection> {
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

  // ResponseChannel: how this exchange answers (on the strand).
  void respond(int status, std::string_view content_type, std::string_view body, const Headers& extra = {}) override;
  void respond_error(const ApiError& e) override;
  void begin_events(const Headers& extra) override;
  void send_event(std::string_view data) override;
  void send_named_event(std::string_view name, std::string_view data) override;
  void end_events() override;
  size_t queued_bytes() const override { return out_.size() + writing_.size() - written_; }

 private:
  struct Route;
  static const Route kRoutes[];
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
  // Answering: the route table's handlers.
  void route(RequestReader::Request& req);
  void respond_json(int status, const std::string& body) { respond(status, "application/json", body); }
  void health(RequestReader::Request& req, std::string_view path, std::string_view query);
  void health_live(RequestReader::Request& req, std::string_view path, std::string_view query);
  void metrics(RequestReader::Request& req, std::string_view path, std::string_view query);
  void reset_prefix_cache(RequestReader::Request& req, std::string_view path, std::string_view query);
  void kv_cache_blocks(RequestReader::Request& req, std::string_view path, std::string_view query);
  void models(RequestReader::Request& req, std::string_view path, std::string_view query);
  void completions(RequestReader::Request& req, std::string_view path, std::string_view query);
  void chat_completions(RequestReader::Request& req, std::string_view path, std::string_view query);
  void messages(RequestReader::Request& req, std::string_view path, std::string_view query);  // Anthropic's
  void embeddings(RequestReader::Request& req, std::string_view path, std::string_view query);
  void rerank(RequestReader::Request& req, std::string_view path, std::string_view query);
  void count_tokens(RequestReader::Request& req, std::string_view path, std::string_view query);
  // OpenAI's Responses API: POST /v1/responses, and GET / DELETE /v1/responses/{id} (the store).
  void responses(RequestReader::Request& req, std::string_view path, std::string_view query);
  void stored_response(RequestReader::Request& req, std::string_view path, std::string_view query);
  void preflight(const RequestReader::Request& req);  // OPTIONS (cors.h)
  // vLLM's /tokenize and /detokenize, llama.cpp's /apply-template, /version (connection_tokenize.cpp).
  void tokenize(RequestReader::Request& req, std::string_view path, std::string_view query);
  void detokenize(RequestReader::Request& req, std::string_view path, std::string_view query);
  void apply_template(RequestReader::Request& req, std::string_view path, std::string_view query);
  void version(RequestReader::Request& req, std::string_view path, std::string_view query);
  // Runs `work` on a request worker (tokenizing must not hold the I/O thread)
  // and answers 200 with the JSON it returns, or the ApiError it throws.
  void answer_off_thread(std::function<nlohmann::json(Headers&)> work);
  // The dashboard (connection_dashboard.cpp): the page, /debug/state, /debug/events.
  void dashboard_page(RequestReader::Request& req, std::string_view path, std::string_view query);
  void debug_state(RequestReader::Request& req, std::string_view path, std::string_view query);
  void debug_events(RequestReader::Request& req, std::string_view path, std::string_view query);
  bool authorized(const RequestReader::Request& req) const;  // --api-key
  std::shared_ptr<GenerationStream> new_stream();
  void end_stream();  // detaches the exchange's generation, if any
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
  bool reading_ = false;        // a read is posted on the socket
  bool keep_alive_ = true;      // of the current exchange
  bool http11_ = true;
  bool head_ = false;          // a HEAD request: responses carry no body
  std::string cors_origin_;    // Access-Control-Allow-Origin for this request, "" for none
  std::string allow_;          // the requested path's methods, for Allow
  bool anthropic_ = false;     // an Anthropic route: errors in Anthropic's shape
  bool complete_ = false;      // the current response is fully queued
  bool close_after_ = false;   // close once the response is written
  bool linger_ = false;        // ... after draining what the client still sends
  std::string out_, writing_;  // queued bytes; bytes being written
  size_t written_ = 0;
  size_t lingered_ = 0;  // bytes discarded by a lingering close
  bool write_in_flight_ = false;
  std::shared_ptr<GenerationStream> stream_;  // the exchange's generation, if it is one
};

}  // namespace pagoda::server
