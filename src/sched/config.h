// The scheduler's settings (the serving flags it reads); the rules they tune
// are stated in scheduler.h.
#pragma once

#include <cstdint>

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
};

}  // namespace pagoda
