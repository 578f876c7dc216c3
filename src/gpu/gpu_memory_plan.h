// How many KV blocks a GPU's memory holds, decided once after the weights and
// the step workspace are on the device. As vLLM's --gpu-memory-utilization:
// the fraction of the device's whole memory this process may take, weights,
// workspace and KV together; what the setup took is measured (free memory
// before and after), not estimated, and the KV pool gets the rest of the
// share. Pure arithmetic, tested with made-up devices (tests/gpu).
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::gpu {

struct GpuMemoryInput {
  int64_t total_bytes = 0;       // the device's memory
  int64_t free_at_start = 0;     // free before this process put anything there
  int64_t free_after_setup = 0;  // free after the weights and the step workspace
  double utilization = 0.9;      // --gpu-memory-utilization, in (0, 1]
  int64_t block_bytes = 0;       // one KV block (a page of one KV group's layers), K and V
  int32_t block_size = 16;
  int64_t cache_tokens = 0;  // --kv-cache-tokens: an explicit pool; 0: the share's rest
  int32_t max_model_len = 0;
  // KV groups (kv/kv_groups.h): N tokens of every layer take N / block_size
  // pages of each group; one max_model_len context holds context_pages at
  // rest (a sliding group only its window's; 0: its blocks of one group).
  int32_t num_groups = 1;
  int64_t context_pages = 0;
};

struct GpuMemoryPlan {
  int32_t num_blocks = 0;
  int64_t kv_bytes = 0;
  std::string summary;  // one line for the startup log, with the figures
  std::string warning;  // non-empty: the pool cannot hold one full context
};

// InvalidArgument for a utilization outside (0, 1]; ResourceExhausted, with
// what to change, when the share is not free at start, or leaves no room
// for two blocks, or an explicit pool does not fit.
GpuMemoryPlan plan_gpu_memory(const GpuMemoryInput& in);

}  // namespace pagoda::gpu
