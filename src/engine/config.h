// The engine's settings: the serving flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/faults.h"
#include "kv/types.h"
#include "model/config.h"  // Pooling
#include "sched/config.h"
#include "util/progress.h"

namespace pagoda {

struct EngineConfig {
  // KV pool: --kv-cache-tokens, or --kv-cache-mem (MiB), or enough for
  // max_num_seqs full contexts capped at a quarter of physical memory and at
  // 90% of what is left after the weights (memory_plan.h).
  int64_t kv_cache_tokens = 0;
  int64_t kv_cache_mem_mib = 0;
  int32_t block_size = 16;
  // Recurrent-state slots of a hybrid model (--state-slots); 0: one per
  // --max-num-seqs, within the memory left after the weights (kv/pool_size.h).
  int64_t state_slots = 0;
  // Prefix caching of a hybrid model keeps the state of prompt prefixes in
  // checkpoints (kv/state_checkpoints.h): --state-checkpoints (-1: one per
  // state slot; 0: none, so no prefix caching), taken every
  // --state-checkpoint-interval tokens (rounded up to blocks) and at a
  // prompt's last block boundaries.
  int64_t state_checkpoints = -1;
  int32_t state_checkpoint_interval = 512;
  KvType kv_type = KvType::F32;
  bool prefix_caching = true;
  bool paged = true;  // false: --no-paged-attn (reserve whole contexts)
  // Sliding-window layers in KV groups of their own that give back what their
  // window left behind (vLLM's hybrid KV cache manager); false:
  // --disable-hybrid-kv-cache-manager, every layer keeps every block.
  bool hybrid_kv_cache = true;
  int32_t max_model_len = 0;   // 0: min(model context, pool tokens)
  SchedulerConfig sched;       // --max-num-seqs, --max-batched-tokens, --max-bypass
  int32_t max_waiting = 1024;  // beyond it, submit() throws Overloaded
  int32_t max_n = 16;          // most choices per request
  double request_timeout_s = 600;
  int32_t max_oom_retries = 2;  // batch halvings before an OOM fails the batch
  bool audit_every_step = false;
  double log_interval_s = 5;  // 0: no throughput log
  // The dashboard's snapshots (snapshot.h): at most one per interval, and one
  // when the engine goes idle. 0: none are taken.
  double snapshot_interval_s = 0;
  FaultSpec faults;
  int32_t threads = 0;
  // Where the model runs (--device): "cpu", or "cuda" (src/cuda, a build with
  // the CUDA toolkit). On a GPU the KV pool is sized by
  // --gpu-memory-utilization (vLLM's: this process's share of the device's
  // memory), and a step not done by --gpu-step-deadline seconds loses the device.
  std::string device = "cpu";
  double gpu_memory_utilization = 0.9;
  double gpu_step_deadline_s = 30;
  // A backend that samples on its device (a GPU) does, except for rows the
  // host needs (grammars); false: every row's logits come back (--cpu-sampling).
  bool sample_on_device = true;
  // --pooling: serve the model as an embedding model pooled this way; unset:
  // as its file declares (pooling_type), none for a generating model.
  std::optional<Pooling> pooling;
  bool mmap = false;  // --mmap: map the model file instead of reading it into memory
  // Where the weights go into memory: read and pack them in Engine::load
  // before the engine starts, not in the background while it serves (the
  // server's default: ready at once). A one-shot run (pagoda generate) wants
  // this: while weights move, steps run from the map beside the mover's
  // thread, and a 1B model's first seconds of decode ran at about half speed.
  bool weights_before_serving = false;
  LoadProgress load_progress;  // Engine::load reports reading and repacking the model here
};

}  // namespace pagoda
