// One completion or chat completion, from request body to last byte:
//
//   start(): parse and tokenize on the request workers (never the I/O
//   thread)  ->  submit to the engine on the connection's strand  ->  the
//   engine's deltas, posted to the strand by the request's sink  ->  SSE
//   chunks as they come, or one JSON response at the end. A completions
//   list of prompts is one engine request per prompt, all under this stream:
//   their choices are numbered prompt-major, usage is summed, the exchange
//   ends when the last one does, and leaving cancels them all.
//
// The stream owns the request's state; its connection owns the stream and
// answers through the ResponseChannel. When the exchange ends or the client
// leaves, the connection detaches the stream: later parse results and
// deltas find it detached and are dropped, and an engine request still
// running is cancelled. The sink runs on the engine thread and never blocks:
// it only posts, and tells the engine once the client is gone.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "server/anthropic_stream.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_channel.h"
#include "server/responses_stream.h"
#include "server/server_state.h"

namespace pagoda::server {

class GenerationStream : public std::enable_shared_from_this<GenerationStream> {
 public:
  GenerationStream(std::shared_ptr<ServerState> state, std::shared_ptr<ResponseChannel> channel,
                   boost::asio::any_io_executor strand);

  // POST /v1/completions, /v1/chat/completions, /v1/messages (Anthropic's) or /v1/responses.
  void start(Api api, std::string body);
  // GET /health?generate=1: one greedy token from a one-token prompt, at the
  // front of the queue, with a deadline; answered as a health status.
  void start_health_probe();
  // Ends the exchange now with an error (shutdown past its deadline): a 503,
  // or a stream's error event once the stream has begun.
  void abort(const std::string& message);
  // The connection is done with this stream (its response is out, or the
  // client left): nothing more reaches the channel; the engine request, if
  // it still runs, is cancelled.
  void detach();

  const std::string& id() const { return ident_.id; }
  bool running() const { return stage_ == Stage::running; }

 private:
  enum class Stage { idle, parsing, running, done };

  void submit(const ServedModel& model, GenerationRequest req, ResponseIdentity ident, const ApiError* error);
  void submit_one(const ServedModel& model, size_t prompt);  // throws ApiError
  void on_output(size_t prompt, RequestOutput&& out);
  void on_probe_output(const RequestOutput& out);
  void stream_head();
  Headers response_headers() const;  // X-Request-Id, and the ignored fields if any
  void stream_delta(const RequestOutput& out);
  void send_named(const std::vector<json>& events);  // named SSE events (Messages, Responses)
  void finish();
  void fail(int status, const std::string& message);
  void retire(bool cancel);  // out of active_generations; cancels the engine request if asked

  std::shared_ptr<ServerState> state_;
  std::shared_ptr<ResponseChannel> channel_;  // null once detached
  boost::asio::any_io_executor strand_;
  Stage stage_ = Stage::idle;
  const ServedModel* model_ = nullptr;  // once submitted
  GenerationRequest req_;
  ResponseIdentity ident_;
  std::vector<uint64_t> engine_ids_;  // one per prompt
  size_t engine_requests_done_ = 0;
  std::vector<ChoiceState> choices_;
  std::unique_ptr<MessagesStream> messages_;               // /v1/messages streamed: its event writer
  std::unique_ptr<ResponsesStream> responses_;             // /v1/responses streamed: its event writer
  std::vector<std::pair<int64_t, int64_t>> prompt_usage_;  // per prompt: (prompt tokens, cached tokens)
  Usage usage_;
  bool head_sent_ = false;    // streaming: the SSE head is out
  bool retired_ = false;      // no longer counted in active_generations
  bool engine_done_ = false;  // the engine delivered the request's last delta
  bool health_probe_ = false;
  std::atomic<bool> gone_{false};  // read by the sink on the engine thread
};

}  // namespace pagoda::server
