// The engine's single-threaded core: owns the scheduler, the block manager
// and the model runner, and runs one step at a time:
//
//   expire deadlines, abort requests whose reader left  ->  schedule  ->
//   copy-on-write copies  ->  one batched forward pass  ->  commit + sample
//   ->  deliver deltas  ->  free what finished  ->  publish statistics.
//
// An embedding model (ModelRunner::pooling()) generates nothing: each
// request's prompt is computed, its hidden states pooled as the pass goes
// (mean, first, or last position), and it ends with the vector on its one
// terminal delta, through finish() like every other sequence.
//
// A request with prompt_logprobs skips the prefix cache and asks the pass
// for the logits of every prompt position of its first choice (each once:
// a recompute after preemption does not ask again); the logprobs go out on
// a delta of their own before each choice's first token.
//
// Every way a sequence ends goes through finish(), which takes it out of the
// scheduler, frees its blocks and sends its one terminal event. Nothing here
// blocks on a reader.
//
// A failed forward pass costs time, not requests. Nothing of it is committed
// or hashed, and a retry rewrites the same K/V positions, so its sequences
// are run again, bisected: each half as its own pass (copy-on-write copies
// were made once, before the first pass), depth first; a half that passes is
// committed and sampled at once, one that fails is halved again, and a
// sequence that fails alone ends with FinishReason::error and "the forward
// pass failed for this request: <cause>". A step spends at most
// 2*ceil(log2(n))+2 such retries (enough to isolate one failing sequence of
// n); sequences the budget does not reach are simply not computed this step
// and are scheduled again next step. Out of memory (ResourceExhausted) first
// halves the batch by preemption, max_oom_retries times, then isolates too.
// A lost device (DeviceLost: a sticky GPU fault) is neither: every request
// ends with "the device was lost: <cause>", the prefix cache is dropped, and
// no step runs again (EngineStats::device_lost says why; serve exits).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/clock.h"
#include "engine/config.h"
#include "engine/faults.h"
#include "engine/kv_events.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/snapshot.h"
#include "engine/stats.h"
#include "engine/step_trace.h"
#include "kv/block_manager.h"
#include "sampling/history.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "sampling/stop_matcher.h"
#include "sched/scheduler.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

class EngineCore {
 public:
  // tokenizer may be null (no text, only token ids; end of generation from
  // eog_ids). num_blocks: the KV pool the runner's storage holds.
  EngineCore(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
             std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock,
             std::vector<TokenId> eog_ids = {});
  ~EngineCore();

  // Checks a request without changing anything: InvalidArgument naming the
  // problem (empty or too long prompt, token outside the vocabulary, bad
  // sampling values, bad n, a grammar that cannot start). Safe from any
  // thread.
  void validate(const Request& r) const;

  // Queues a validated request under `id` (ids must be unique).
  void add(uint64_t id, Request r, OutputSink sink);
  // Ends a request wherever it is (idempotent; unknown ids are ignored).
  void cancel(uint64_t id, FinishReason why = FinishReason::abort, const std::string& message = "");

  // One step. Returns false when there was nothing to run.
  bool step();
  // What a step carries, reported on the engine thread once its plan is made
  // and before its forward pass, for a watcher of stuck steps.
  struct StepStart {
    int64_t step = 0;
    int32_t tokens = 0, running = 0, waiting = 0;
  };
  void on_step_start(std::function<void(const StepStart&)> f) { on_step_start_ = std::move(f); }
  bool has_work() const { return !requests_.empty(); }
  template <class F>
  void for_each_request(F&& f) const {
    for (const auto& [id, r] : requests_) f(id);
  }

  const EngineConfig& config() const { return config_; }
  int32_t max_model_len() const { return max_model_len_; }
  int32_t vocab_size() const { return vocab_size_; }
  Pooling pooling() const { return pooling_; }
  int32_t output_width() const { return out_width_; }
  const BlockManager& blocks() const { return blocks_; }
  const Scheduler& scheduler() const { return sched_; }
  const LearnedStepCost& step_cost() const { return cost_; }
  const EngineStats& stats() const { return stats_; }
  // The engine thread's phase clock (step_trace.h): the step's phases here,
  // the loop's around it (inbox, publish, wait) in Engine.
  PhaseClock& trace() { return trace_; }
  // KV events (engine/kv_events.h): every step's go to the sink; null stops them.
  void set_kv_event_sink(std::shared_ptr<KvEventSink> sink);
  // Drops every cached prefix; false (nothing changes) while a request holds blocks.
  bool reset_prefix_cache();
  FaultInjector& faults() { return faults_; }
  size_t num_requests() const { return requests_.size(); }
  size_t num_sequences() const { return seqs_.size(); }
  // The dashboard's picture of the engine now (snapshot.h); version is 0.
  std::shared_ptr<EngineSnapshot> take_snapshot() const;

 private:
  struct RequestState;
  struct SeqRun;

  void expire_and_reap();
  int64_t begin_step(const StepPlan& plan);
  void end_step(const StepPlan& plan, bool clean, double took, int64_t generated);
  void settle(double t0);
  bool run_step(StepPlan& plan);  // true: one clean pass (a timing the cost model may learn from)
  bool run_plan(StepPlan& plan);  // run_step without the DeviceLost handling
  void lose_device(const std::string& cause);
  void end_every_request(const std::string& why);
  void forward(std::span<const ScheduledSeq> part);
  void isolate_failure(std::span<const ScheduledSeq> all, const std::string& cause);
  static int32_t isolation_budget(size_t num_seqs);
  void build_batch(std::span<const ScheduledSeq> part, Batch& batch) const;
  // The chunk's positions whose logits give prompt logprobs: [first, first + count).
  // The prompt positions of this chunk whose logprobs are wanted: (first, count).
  static std::pair<int32_t, int32_t> prompt_logprob_span(const SeqRun* run, const ScheduledSeq& sc);
  bool record_prompt_logprobs(SeqRun& s, int32_t first, int32_t count, size_t row);
  // An embedding model (engine_pooling.cpp): the chunk's positions whose hidden
  // states the pooling takes, and what happens to them after the pass.
  std::pair<int32_t, int32_t> pooled_span(const SeqRun* run, const ScheduledSeq& sc) const;
  void after_pooling_forward(std::span<const ScheduledSeq> part);
  void after_forward(std::span<const ScheduledSeq> part);
  // After a pass: the sequence's computed tokens into the block manager, and
  // a hybrid's state checkpoint, if this is where its prompt takes one.
  void commit(Sequence& seq);
  void fail_batch(std::span<const ScheduledSeq> part, const std::string& cause);
  // A sequence's sampled row in a pass: its logits row among those that
  // came back (host), or its answer among the backend's (sampled).
  struct SampleRow {
    SeqRun* seq;
    int64_t host;
    int32_t sampled;
  };
  // The backend samples a row itself (ModelRunner::samples_rows) unless the
  // host needs its logits: a grammar's mask, a first token's forks.
  bool samples_on_device(const SeqRun& s) const;
  void plan_sampling(std::span<const ScheduledSeq> part);  // sampling_ for the pass
  void fill_step_masks(std::span<const SampleRow> rows);
  void deliver_prompt_logprobs(SeqRun& s);  // before a choice's first token
  void sample_seq(SeqRun& s, std::span<const float> logits);
  void take_sampled(SeqRun& s, const SampledRow& r);
  // The chosen token's way out: statistics, stops, detokenization, delivery.
  void emit_token(SeqRun& s, TokenId id, std::optional<GeneratedLogprobs> lp, bool waiting);
  std::vector<SeqRun*> fork_choices(SeqRun& parent);
  void deliver(RequestState& req, int32_t choice, RequestOutput&& out);
  void finish(SeqRun& s, FinishReason reason, const std::string& error = "");
  void check_idle();
  void publish();

  EngineConfig config_;
  FaultInjector faults_;  // before runner_: a FaultyRunner holds it
  std::unique_ptr<ModelRunner> runner_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<const Clock> clock_;
  std::vector<TokenId> eog_ids_;
  int32_t vocab_size_;
  Pooling pooling_;    // none: a generating model; else an embedding model's (engine_pooling.cpp)
  bool causal_;        // false: each sequence's input in one pass (ModelRunner::causal)
  int32_t out_width_;  // the width of the pass's output rows: vocab_size_, or the hidden size
  bool rank_last_;     // rank pooling reads the last position (else the first)
  int32_t max_model_len_;
  BlockManager blocks_;
  Scheduler sched_;
  LearnedStepCost cost_;  // the forward pass's cost on this model and machine (scheduler rule 5)
  Sampler sampler_;

  std::map<uint64_t, std::unique_ptr<RequestState>> requests_;
  std::unordered_map<SeqId, std::unique_ptr<SeqRun>> seqs_;
  std::vector<SeqId> finished_;         // erased at the end of the step
  std::vector<uint64_t> readers_gone_;  // sinks that returned false: abort next step
  SeqId next_seq_id_ = 1;
  uint64_t next_arrival_ = 0;
  int64_t step_ = 0;
  std::vector<float> logits_;  // the pass's rows that came back
  std::vector<float> masked_;  // one row of logits under a grammar mask
  StepSampling sampling_;      // the pass's rows the backend samples (plan_sampling)
  std::vector<SampledRow> sampled_;
  EngineStats stats_;
  PhaseClock trace_;
  std::function<void(const StepStart&)> on_step_start_;
  bool idle_leak_reported_ = false;
  std::string device_lost_;  // "the device was lost: <cause>" (DeviceLost), or empty; set: no step runs
  FinishLog finish_log_;     // the dashboard's recent finishes
  AuditView audit_;          // --audit-every-step's results
  KvEventRelay kv_events_;
};

}  // namespace pagoda
