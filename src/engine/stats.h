// What the engine publishes after every step (Engine::snapshot()): counters,
// gauges and latency histograms, read by /metrics, /health, the throughput
// log and the benchmarks.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "engine/faults.h"
#include "engine/request_metrics.h"
#include "engine/step_trace.h"

namespace pagoda {

// Bounds (seconds) of Pagoda's own latency histograms (pagoda_* on /metrics,
// the dashboard's charts); their vLLM twins use vLLM's (request_metrics.h).
inline constexpr std::array<double, 14> kLatencyBounds = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                                          0.5,   1.0,   2.5,  5.0,   10.0, 30.0, 60.0};
inline BucketHistogram latency_histogram() { return BucketHistogram(kLatencyBounds); }

struct EngineStats {
  int64_t steps = 0;
  std::string device_lost;   // why the device was lost (engine_core.h: nothing runs after), or empty
  double last_step_end = 0;  // heartbeat: clock time the last step finished
  double last_step_seconds = 0;
  int32_t last_step_tokens = 0;
  // Mixtures of experts: experts the last forward pass ran (summed over its
  // layers), and all passes' (0 for a dense model).
  int32_t last_step_experts = 0;
  int64_t experts_run = 0;
  bool step_in_progress = false;
  double step_started_at = 0;       // clock time the step in progress began
  double step_predicted_s = 0;      // how long it should take (StepEstimate); 0: unknown
  int64_t idle_check_failures = 0;  // times the engine went idle with KV blocks still in use
  int32_t running = 0, waiting = 0;
  int32_t kv_blocks_total = 0, kv_blocks_used = 0, kv_blocks_cached = 0, kv_blocks_free = 0;
  double kv_usage = 0;
  int64_t prefix_queries = 0, prefix_hits = 0;  // tokens, fresh admissions
  bool prefix_caching = true;                   // as applied: a hybrid's needs state checkpoints
  // Recurrent-state slots (a hybrid model; 0 total: it keeps no state).
  int32_t state_slots_total = 0, state_slots_used = 0;
  // A hybrid's prefix caching: state checkpoints held, and what became of them.
  int32_t state_checkpoints_total = 0, state_checkpoints_used = 0;
  int64_t state_checkpoint_saves = 0, state_checkpoint_hits = 0, state_checkpoint_evictions = 0;
  int64_t preemptions = 0;
  int64_t tokens_processed = 0;  // tokens through forward passes (prompt + generated)
  int64_t prompt_tokens = 0, generation_tokens = 0, cached_tokens = 0;
  int64_t requests_received = 0, requests_rejected = 0;
  int64_t finished_stop = 0, finished_length = 0, aborted = 0, timed_out = 0, errored = 0;
  int64_t step_failures = 0, oom_retries = 0;
  int64_t forward_retries = 0;  // passes re-run to isolate a failure (halves)
  FaultCounts faults;
  BucketHistogram ttft = latency_histogram(), itl = latency_histogram(), e2e = latency_histogram();
  // Time-budgeted steps (scheduler rule 5), of the last step that ran.
  BucketHistogram step_duration = latency_histogram();  // seconds of each step that ran
  // Each time-capped step's duration over its target: how far the cost
  // model's plans overshoot (above 1: the step ran past its target).
  BucketHistogram step_over_target{0.5, 0.75, 1, 1.25, 1.5, 2, 3, 5};
  int32_t step_budget_tokens = 0;                // tokens it could carry (decodes + what fits the target)
  double step_target_s = 0;                      // its target time; 0: no time cap
  double step_cost_predicted_s = 0;              // the cost model's time for its plan; 0: unknown
  RequestMetrics per_request;                    // vLLM's figures (its names on /metrics)
  double time_in_forward = 0, time_in_step = 0;  // seconds, for the bench's overhead share
  double time_in_masks = 0;                      // seconds filling grammar masks (constrained decoding)
  int64_t masks_filled = 0;                      // grammar masks filled (one per constrained sample)
  // KV utilization: tokens held by running sequences over the token slots of
  // their blocks, summed over steps that ran (divide by the count).
  double kv_utilization_sum = 0;
  int64_t kv_utilization_samples = 0;
  StepPhaseTimes phases;  // the engine thread's time by phase (step_trace.h), as of the last step

  int64_t requests_finished() const { return finished_stop + finished_length + aborted + timed_out + errored; }
};

}  // namespace pagoda
