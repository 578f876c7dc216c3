// The scheduler's settings (the serving flags it reads); the rules they tune
// are stated in scheduler.h.
#pragma once

#include <cstdint>
#include <string_view>

namespace pagoda {

struct SchedulerConfig {
  int32_t max_num_seqs = 64;
  int32_t max_batched_tokens = 2048;
  int32_t max_bypass = 16;
  int32_t max_preemptions_per_step = 8;
  int32_t max_preemptions_per_request = 4;
  // Admission headroom in paged mode (rule 3): a fraction of the pool (vLLM's
  // default), plus blocks per running sequence (64 tokens of growth each at
  // the default block size, so completions free blocks before the headroom
  // is gone). Zero for both admits whatever fits now, and preempts as soon
  // as the pool fills.
  double kv_watermark = 0.01;
  int32_t kv_headroom_per_seq = 4;
  // Time-budgeted steps (rule 5), --max-step-ms: a target in milliseconds,
  // kAutoStepMs (auto_step_multiple x the predicted decode-only step of the
  // batch being served, at least auto_step_floor_ms), or 0: the token budget
  // alone, exactly as before time budgets.
  static constexpr double kAutoStepMs = -1;
  double max_step_ms = kAutoStepMs;
  double auto_step_multiple = 2.0;
  double auto_step_floor_ms = 10;
  int32_t min_prefill_chunk = 16;  // a decode-carrying step still prefills this much
  // Cold start of rule 5 (no prediction yet): the k-th step is capped at
  // cold_start_tokens << k, so the first steps the cost model learns from
  // grow from short to full instead of all being max_batched_tokens long
  // (seconds each for a 1B model on a CPU, with every stream waiting).
  int32_t cold_start_tokens = 128;
  // --long-prefill-token-threshold (vLLM): a prefill chunk is capped at N
  // tokens a step even when nothing else runs; 0: no cap.
  int32_t long_prefill_token_threshold = 0;
};

// --max-step-ms into `config`: "auto" (kAutoStepMs, the default multiple),
// "Nx" (kAutoStepMs with auto_step_multiple N > 0, e.g. "2.5x") or
// milliseconds >= 0; InvalidArgument (one line) for anything else.
void parse_max_step_ms(std::string_view text, SchedulerConfig& config);

}  // namespace pagoda
