// The engine as the rest of Pagoda uses it: one engine thread runs
// EngineCore::step() in a loop; any other thread submits requests, cancels
// them, and reads the statistics the engine publishes after every step. The
// inbox (requests and cancellations) is the only state shared across threads.
//
// A throughput logger thread prints, every log_interval_s,
//   Throughput (T/s) 122.80, Prefix cache hitrate 96.77%, 14 running, 3 waiting, KV 43.1% used, 2 preemptions
// from the last published snapshot, so it keeps printing (at 0 T/s) while a
// step hangs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_core.h"
#include "engine/step_estimate.h"

namespace pagoda {

// A finished request, for the offline API.
struct Completion {
  struct Choice {
    std::vector<TokenId> tokens;
    std::string text;
    std::vector<GeneratedLogprobs> logprobs;
    FinishReason finish = FinishReason::none;
    std::string error;
  };
  uint64_t request_id = 0;
  int32_t num_prompt_tokens = 0, num_cached_tokens = 0;
  std::vector<Choice> choices;
};

class Engine {
 public:
  Engine(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
         std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock = std::make_shared<SteadyClock>());
  ~Engine();  // stops the threads; requests still open end with an error

  // Loads a GGUF model and sizes the KV pool from the config.
  static std::unique_ptr<Engine> load(const std::string& model_path, const EngineConfig& config);

  // Validates (InvalidArgument) and queues a request (Overloaded when the
  // waiting queue is full). Returns its id. The sink is called on the engine
  // thread and must not block.
  uint64_t submit(Request r, OutputSink sink);
  // Ends a request wherever it is; idempotent.
  void cancel(uint64_t id);

  EngineStats snapshot() const;
  int32_t max_model_len() const { return max_model_len_; }
  int32_t vocab_size() const { return vocab_size_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const EngineConfig& config() const { return config_; }
  size_t inbox_size() const;

  // Stops taking requests; ends every open request with `reason` (error by
  // default) after the engine finishes the current step.
  void shutdown(const std::string& reason = "the server is shutting down");
  // After shutdown(): waits up to timeout_s for the engine thread to leave
  // its loop; false if a step is still running (stuck).
  bool wait_stopped(double timeout_s);

  // Offline API: runs the requests to completion on this engine (the engine
  // thread does the work; this thread waits) and returns them in order.
  std::vector<Completion> generate(std::vector<Request> requests);

 private:
  void engine_loop();
  void logger_loop();

  EngineConfig config_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<const Clock> clock_;
  std::unique_ptr<EngineCore> core_;
  int32_t max_model_len_ = 0, vocab_size_ = 0;

  struct Pending {
    uint64_t id;
    Request request;
    OutputSink sink;
  };
  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<Pending> adds_;
  std::vector<uint64_t> cancels_;
  bool stopping_ = false;
  std::string stop_reason_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int64_t> open_requests_{0};  // submitted and not yet finished
  bool loop_exited_ = false;               // under inbox_mu_
  std::condition_variable exited_cv_;
  StepEstimate estimate_;                  // engine thread only

  mutable std::mutex stats_mu_;
  EngineStats stats_;  // the published snapshot

  std::mutex logger_mu_;
  std::condition_variable logger_cv_;
  bool logger_stop_ = false;

  std::thread engine_thread_, logger_thread_;
};

}  // namespace pagoda
