// Sizing the KV block pool at startup: from --kv-cache-tokens, from a memory
// budget (--kv-cache-mem, MiB), or by default enough for --max-num-seqs
// full-context sequences, capped at a quarter of physical memory and at 90%
// of the memory left after the weights (engine/memory_plan.h). A pure
// function (physical memory and what is left are passed in), so every rule is
// testable.
//
// With KV groups (kv_groups.h) a block is a page of one group's layers:
// --kv-cache-tokens N buys the memory of N tokens of every layer (N / block
// size pages per group), and a default context counts the pages it holds at
// rest (its window's only, in a sliding group).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda {

struct KvPoolOptions {
  int64_t cache_tokens = 0;   // --kv-cache-tokens; 0 = not given
  int64_t cache_mem_mib = 0;  // --kv-cache-mem; 0 = not given
  int32_t max_num_seqs = 1;
  int32_t context_len = 0;  // tokens of one full context
  int32_t block_size = 16;
  int64_t kv_bytes_per_token = 0;      // see kv_bytes_per_token(): every layer's
  int64_t physical_mem_bytes = 0;      // 0 = ask the system
  std::vector<int32_t> group_windows;  // KvGroups::windows; empty: one full-attention group
  // The memory left for the pool after the weights and the process's own
  // (engine/memory_plan.h); -1: unknown, no bound. The default takes
  // kDefaultKvShare of it.
  int64_t mem_left_bytes = -1;
  // The most an explicit size may take (-1: mem_left_bytes): above it the
  // kernel would overcommit and kill the process later, so it is refused.
  // Larger than mem_left_bytes where the pool may take the page cache that
  // keeps mapped weights resident (slower steps, no OOM): then a warning.
  int64_t mem_max_bytes = -1;
  // What mem_left_bytes is, for the log and errors: "left after the weights
  // (1.0 GiB, in memory) under RLIMIT_AS".
  std::string mem_left_why;
};

// The default pool's share of the memory left: the rest absorbs what the
// estimate of the process's own memory misses.
inline constexpr double kDefaultKvShare = 0.9;

struct KvPoolSize {
  int32_t num_blocks = 0;  // pages, with KV groups
  int64_t bytes = 0;       // K/V storage the model side will allocate
  std::string summary;     // one line for the startup log
  std::string warning;     // a second line, for a warning, or empty
};

// 2 (K and V) * layers * KV heads * head dim * bytes per value (4 for F32).
int64_t kv_bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, int32_t bytes_per_value = 4);

int64_t physical_memory_bytes();  // sysconf; 0 if unknown

// "1.5 GiB" or "640.0 MiB": byte counts in the log.
std::string format_bytes(int64_t bytes);

// Throws InvalidArgument for contradictory or impossible options, including
// a pool that cannot hold two tokens; ResourceExhausted (naming the figures
// and the flags that fix it) for an explicit pool above mem_max_bytes, or a
// default whose share of it cannot hold one full context.
KvPoolSize size_kv_pool(const KvPoolOptions& options);

// Recurrent-state slots (a hybrid model, kv/state_slots.h), sized before the
// KV pool: their memory comes out of what is left after the weights, and the
// KV pool's default share is taken of the rest. The default is one slot per
// running sequence (--max-num-seqs, vLLM's), capped at what kDefaultKvShare
// of the memory left holds; --state-slots N asks for exactly N. Prefix
// caching's checkpoints come with them: one per slot by default, or
// --state-checkpoints N (0: none).
struct StatePoolOptions {
  int64_t state_slots = 0;         // --state-slots; 0 = not given
  int64_t state_checkpoints = -1;  // --state-checkpoints; -1: one per slot (a third buffer each)
  int32_t max_num_seqs = 1;
  int64_t state_bytes = 0;      // one buffer (ModelConfig::state_bytes()); 0: the model keeps no state
  int64_t mem_left_bytes = -1;  // as KvPoolOptions: -1 unknown
  std::string mem_left_why;
};

struct StatePoolSize {
  int32_t num_slots = 0;        // 0: the model keeps no state
  int32_t num_checkpoints = 0;  // prefix-cache checkpoint buffers (kv/state_checkpoints.h)
  int64_t bytes = 0;            // two buffers a slot, and one per checkpoint
  std::string summary;          // one line for the startup log; empty without state
};

// InvalidArgument for a negative count; ResourceExhausted, naming the
// figures, when --state-slots N, or even one default slot, does not fit.
StatePoolSize size_state_pool(const StatePoolOptions& options);

// The least memory the state pool needs from mem_left_bytes: the explicit
// count, or one default slot per --max-num-seqs.
int64_t state_pool_needs_bytes(const StatePoolOptions& options);

// The least memory the options need from mem_left_bytes: the explicit pool,
// or the default's one full context (grossed up by its share), so the
// weights' residency can leave room for it (engine/memory_plan.h).
int64_t kv_pool_needs_bytes(const KvPoolOptions& options);

}  // namespace pagoda
