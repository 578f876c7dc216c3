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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/clock.h"
#include "engine/config.h"
#include "engine/kv_events.h"
#include "engine/request.h"
#include "engine/snapshot.h"
#include "engine/stats.h"

namespace pagoda {

class ModelRunner;
class Tokenizer;

// A finished request, for the offline API.
struct Completion {
  struct Choice {
    std::vector<TokenId> tokens;
    std::string text;
    std::vector<GeneratedLogprobs> logprobs;
    FinishReason finish = FinishReason::none;
    std::string error;
    std::vector<float> embedding;  // an embedding model's (RequestOutput::embedding)
  };
  uint64_t request_id = 0;
  int32_t num_prompt_tokens = 0, num_cached_tokens = 0;
  std::vector<Choice> choices;
};

class Engine {
 public:
  Engine(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
         std::shared_ptr<const Tokenizer> tokenizer,
         std::shared_ptr<const Clock> clock = std::make_shared<SteadyClock>());
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
  // The dashboard's latest picture (null when config.snapshot_interval_s is
  // 0). Never waits for the engine's step. A call counts as watching: the
  // engine builds pictures only for SnapshotBoard::kWatchWindowS after the
  // last call, and a call that finds the picture stale wakes it for a new one.
  std::shared_ptr<const EngineSnapshot> state_snapshot() const;
  // Nothing has happened in the engine since the latest picture was taken.
  bool state_snapshot_current() const;
  int32_t max_model_len() const;
  int32_t vocab_size() const;
  // An embedding model's pooling (none: a generating model), and the width
  // of its output: the embedding's size, or the vocabulary's.
  Pooling pooling() const;
  int32_t output_width() const;
  const Tokenizer* tokenizer() const;
  const EngineConfig& config() const;
  size_t inbox_size() const;

  // Control operations: run on the engine thread between steps; each waits
  // for it at most timeout_s (Overloaded if the engine did not get to it).
  // KV events (engine/kv_events.h) go to `sink` from now on (null: off).
  void set_kv_event_sink(std::shared_ptr<KvEventSink> sink, double timeout_s = 10);
  // Drops every cached prefix; false while a request holds KV blocks.
  bool reset_prefix_cache(double timeout_s = 5);
  // The distinct block hashes in the prefix cache, sorted (a debugging view).
  std::vector<uint64_t> cached_block_hashes(double timeout_s = 5);

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
  struct Impl;  // the core, the inbox, the threads, the published stats
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda
