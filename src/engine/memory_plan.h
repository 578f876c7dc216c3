// One decision at load: where the model's weights live and how much memory
// is left for the KV pool, from every limit on this process's memory
// (util/memory_limits.h). Pure arithmetic, so every rule is tested with
// made-up limits (tests/engine/memory_plan_test.cpp).
//
// Each limit gives the bytes still free under it: MemAvailable; the cgroup's
// limit less its working set; RLIMIT_AS less VmSize; RLIMIT_DATA less VmData;
// each less a reserve for the process's own memory (threads, requests,
// activations). Against them:
//  - weights copied into memory (model/weight_mover.h's arena) count under
//    every limit (the file stays mapped, so under RLIMIT_AS both count);
//  - weights served from the map take nothing the kernel cannot reclaim, but
//    their page cache should stay resident: under MemAvailable and the cgroup
//    they count for the pool (which then never evicts them), under RLIMIT_AS
//    the map is already in VmSize, and under RLIMIT_DATA it is no data.
// The weights are copied when the copy leaves the KV cache what it needs (by
// default one full context, or the explicit size), else served from the map.
// The pool gets what is left under the tightest limit (kv/pool_size.h takes
// its share).
#pragma once

#include <cstdint>
#include <string>

#include "util/mapped_file.h"
#include "util/memory_limits.h"

namespace pagoda {

struct MemoryPlanInput {
  MemoryLimits limits;
  int64_t weight_bytes = 0;    // the weights' matrices: what a copy takes
  bool may_copy = true;        // false: --mmap
  int64_t reserve_bytes = 0;   // the process's own memory: process_reserve_bytes()
  int64_t kv_needs_bytes = 0;  // kv_pool_needs_bytes()
};

struct MemoryPlan {
  Residency residency = Residency::kInMemory;
  int64_t left_bytes = -1;  // KvPoolOptions::mem_left_bytes (-1: no limit known)
  int64_t max_bytes = -1;   // KvPoolOptions::mem_max_bytes
  std::string left_why;     // KvPoolOptions::mem_left_why
  std::string limit;        // the tightest limit's name; empty where none is known
  std::string summary;      // one line for the startup log, with the figures
  bool warn = false;        // mapped for want of memory: a warning
};

MemoryPlan plan_memory(const MemoryPlanInput& in);

// What the process takes beyond weights and KV: 256 MiB of working memory
// (requests, activations, allocator slack) and a thread stack per engine thread.
int64_t process_reserve_bytes(int engine_threads);

}  // namespace pagoda
