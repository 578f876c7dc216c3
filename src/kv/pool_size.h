// Sizing the KV block pool at startup: from --kv-cache-tokens, from a memory
// budget (--kv-cache-mem, MiB), or by default enough for --max-num-seqs
// full-context sequences, capped at a quarter of physical memory. A pure
// function (physical memory can be passed in), so every rule is testable.
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
};

struct KvPoolSize {
  int32_t num_blocks = 0;  // pages, with KV groups
  int64_t bytes = 0;       // K/V storage the model side will allocate
  std::string summary;     // one line for the startup log
};

// 2 (K and V) * layers * KV heads * head dim * bytes per value (4 for F32).
int64_t kv_bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, int32_t bytes_per_value = 4);

int64_t physical_memory_bytes();  // sysconf; 0 if unknown

// Throws InvalidArgument for contradictory or impossible options, including
// a pool that cannot hold one full context (such requests would never run).
KvPoolSize size_kv_pool(const KvPoolOptions& options);

}  // namespace pagoda
