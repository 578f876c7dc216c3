// KV pool sizing rules; see pool_size.h.
#include "kv/pool_size.h"

#include <unistd.h>

#include <algorithm>
#include <climits>

#include "kv/kv_groups.h"
#include "util/error.h"

namespace pagoda {

int64_t kv_bytes_per_token(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, int32_t bytes_per_value) {
  if (n_layers < 1 || n_kv_heads < 1 || head_dim < 1 || bytes_per_value < 1) {
    fail<InvalidArgument>("KV shape must be positive: {} layers, {} KV heads, head dim {}, {} bytes per value",
                          n_layers, n_kv_heads, head_dim, bytes_per_value);
  }
  return 2 * int64_t(n_layers) * n_kv_heads * head_dim * bytes_per_value;
}

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return int64_t(pages) * int64_t(page_size);
}

KvPoolSize size_kv_pool(const KvPoolOptions& o) {
  if (o.block_size < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", o.block_size);
  if (o.max_num_seqs < 1) fail<InvalidArgument>("--max-num-seqs must be >= 1, got {}", o.max_num_seqs);
  if (o.context_len < 1) fail<InvalidArgument>("context length must be >= 1, got {}", o.context_len);
  if (o.kv_bytes_per_token < 1) fail<InvalidArgument>("KV bytes per token must be >= 1, got {}", o.kv_bytes_per_token);
  if (o.cache_tokens < 0) fail<InvalidArgument>("--kv-cache-tokens must be >= 1, got {}", o.cache_tokens);
  if (o.cache_mem_mib < 0) fail<InvalidArgument>("--kv-cache-mem must be >= 1 MiB, got {}", o.cache_mem_mib);
  if (o.cache_tokens > 0 && o.cache_mem_mib > 0) {
    fail<InvalidArgument>("--kv-cache-tokens and --kv-cache-mem are exclusive; give one");
  }
  KvGroups groups;
  groups.windows = o.group_windows.empty() ? std::vector<int32_t>{0} : o.group_windows;
  const int64_t num_groups = groups.num_groups();
  // A page holds one group's share of the layers.
  const int64_t block_bytes = o.kv_bytes_per_token * o.block_size / num_groups;
  if (block_bytes < 1) fail<InvalidArgument>("a KV page of {} groups holds no bytes", num_groups);
  int64_t blocks = 0;
  std::string source;
  if (o.cache_tokens > 0) {
    blocks = (o.cache_tokens + o.block_size - 1) / o.block_size * num_groups;
    source = fmt::format("--kv-cache-tokens {}", o.cache_tokens);
  } else if (o.cache_mem_mib > 0) {
    if (o.cache_mem_mib > INT64_MAX / (1 << 20))
      fail<InvalidArgument>("--kv-cache-mem {} MiB is too large", o.cache_mem_mib);
    blocks = o.cache_mem_mib * (1 << 20) / block_bytes;
    source = fmt::format("--kv-cache-mem {} MiB", o.cache_mem_mib);
    if (blocks == 0) {
      fail<InvalidArgument>("--kv-cache-mem {} MiB holds no KV block of {} bytes", o.cache_mem_mib, block_bytes);
    }
  } else {
    // One group: the tokens of all contexts in whole blocks, as before groups.
    blocks = num_groups == 1 ? (int64_t(o.max_num_seqs) * o.context_len + o.block_size - 1) / o.block_size
                             : int64_t(o.max_num_seqs) * groups.pages_at_rest(o.context_len, o.block_size);
    source = fmt::format("default: {} seqs x {} tokens", o.max_num_seqs, o.context_len);
    const int64_t phys = o.physical_mem_bytes > 0 ? o.physical_mem_bytes : physical_memory_bytes();
    if (phys > 0) {
      const int64_t cap = phys / 4 / block_bytes;
      if (blocks > cap) {
        blocks = cap;
        source += fmt::format(", capped at 1/4 of {:.1f} GiB physical memory", double(phys) / (1 << 30));
      }
    }
  }
  if (blocks > INT32_MAX / o.block_size) fail<InvalidArgument>("KV cache of {} blocks is too large", blocks);
  // A pool smaller than one context is allowed (tests and small machines use
  // one): the engine then lowers the maximum model length to the pool's size.
  if (blocks / num_groups * o.block_size < 2)
    fail<InvalidArgument>("KV cache of {} tokens ({}) is too small", blocks / num_groups * o.block_size, source);
  if (blocks < groups.pages_at_rest(o.context_len, o.block_size))
    source += fmt::format("; smaller than one {}-token context, so it limits the model length", o.context_len);
  KvPoolSize r;
  r.num_blocks = int32_t(blocks);
  r.bytes = blocks * block_bytes;
  if (num_groups == 1) {
    r.summary = fmt::format("KV cache: {} blocks x {} tokens = {} tokens, {:.1f} MiB ({})", r.num_blocks, o.block_size,
                            blocks * o.block_size, double(r.bytes) / (1 << 20), source);
  } else {
    const auto sliding = std::count_if(groups.windows.begin(), groups.windows.end(), [](int32_t w) { return w > 0; });
    r.summary = fmt::format(
        "KV cache: {} blocks x {} tokens in {} groups ({} sliding) = {} tokens of every layer, one {}-token context "
        "holds {} blocks, {:.1f} MiB ({})",
        r.num_blocks, o.block_size, num_groups, sliding, blocks / num_groups * o.block_size, o.context_len,
        groups.pages_at_rest(o.context_len, o.block_size), double(r.bytes) / (1 << 20), source);
  }
  return r;
}

}  // namespace pagoda
