// KV pool sizing rules; see pool_size.h.
#include "kv/pool_size.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

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

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

void check_options(const KvPoolOptions& o) {
  if (o.block_size < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", o.block_size);
  if (o.max_num_seqs < 1) fail<InvalidArgument>("--max-num-seqs must be >= 1, got {}", o.max_num_seqs);
  if (o.context_len < 1) fail<InvalidArgument>("context length must be >= 1, got {}", o.context_len);
  if (o.kv_bytes_per_token < 1) fail<InvalidArgument>("KV bytes per token must be >= 1, got {}", o.kv_bytes_per_token);
  if (o.cache_tokens < 0) fail<InvalidArgument>("--kv-cache-tokens must be >= 1, got {}", o.cache_tokens);
  if (o.cache_mem_mib < 0) fail<InvalidArgument>("--kv-cache-mem must be >= 1 MiB, got {}", o.cache_mem_mib);
  if (o.cache_tokens > 0 && o.cache_mem_mib > 0) {
    fail<InvalidArgument>("--kv-cache-tokens and --kv-cache-mem are exclusive; give one");
  }
  if (o.cache_mem_mib > INT64_MAX / kMiB) fail<InvalidArgument>("--kv-cache-mem {} MiB is too large", o.cache_mem_mib);
  if (o.cache_tokens > INT64_MAX / 2 - o.block_size)
    fail<InvalidArgument>("--kv-cache-tokens {} is too large", o.cache_tokens);
}

KvGroups groups_of(const KvPoolOptions& o) {
  KvGroups groups;
  groups.windows = o.group_windows.empty() ? std::vector<int32_t>{0} : o.group_windows;
  return groups;
}

// A page holds one group's share of the layers.
int64_t page_bytes(const KvPoolOptions& o, int64_t num_groups) {
  const int64_t bytes = o.kv_bytes_per_token * o.block_size / num_groups;
  if (bytes < 1) fail<InvalidArgument>("a KV page of {} groups holds no bytes", num_groups);
  return bytes;
}

int64_t explicit_blocks(const KvPoolOptions& o, int64_t num_groups, int64_t block_bytes) {
  if (o.cache_tokens > 0) return (o.cache_tokens + o.block_size - 1) / o.block_size * num_groups;
  return o.cache_mem_mib * kMiB / block_bytes;
}

// The explicit size that would fit `bytes`, or what to do when nothing does.
std::string at_most(int64_t bytes) {
  if (bytes < kMiB) return "nothing is left for a KV cache: free memory, or raise the limit";
  return fmt::format("give at most --kv-cache-mem {}", bytes / kMiB);
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  if (std::abs(bytes) >= (int64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(1 << 30));
  return fmt::format("{:.1f} MiB", double(bytes) / double(kMiB));
}

int64_t kv_pool_needs_bytes(const KvPoolOptions& o) {
  check_options(o);
  const KvGroups groups = groups_of(o);
  const int64_t block_bytes = page_bytes(o, groups.num_groups());
  if (o.cache_tokens > 0 || o.cache_mem_mib > 0)
    return explicit_blocks(o, groups.num_groups(), block_bytes) * block_bytes;
  const double context_bytes = double(groups.pages_at_rest(o.context_len, o.block_size) * block_bytes);
  return int64_t(std::ceil(context_bytes / kDefaultKvShare));
}

KvPoolSize size_kv_pool(const KvPoolOptions& o) {
  check_options(o);
  const KvGroups groups = groups_of(o);
  const int64_t num_groups = groups.num_groups();
  const int64_t block_bytes = page_bytes(o, num_groups);
  const int64_t context_pages = groups.pages_at_rest(o.context_len, o.block_size);
  const std::string left =
      o.mem_left_bytes < 0 ? "" : format_bytes(std::max<int64_t>(0, o.mem_left_bytes)) + " " + o.mem_left_why;
  KvPoolSize r;
  int64_t blocks = 0;
  std::string source;
  if (o.cache_tokens > 0 || o.cache_mem_mib > 0) {
    blocks = explicit_blocks(o, num_groups, block_bytes);
    source = o.cache_tokens > 0 ? fmt::format("--kv-cache-tokens {}", o.cache_tokens)
                                : fmt::format("--kv-cache-mem {} MiB", o.cache_mem_mib);
    const int64_t bytes = blocks * block_bytes;
    const std::string asked = o.cache_tokens > 0 ? fmt::format("{} ({})", source, format_bytes(bytes)) : source;
    if (blocks == 0) {
      fail<InvalidArgument>("--kv-cache-mem {} MiB holds no KV block of {} bytes", o.cache_mem_mib, block_bytes);
    }
    const int64_t max = o.mem_max_bytes >= 0 ? o.mem_max_bytes : o.mem_left_bytes;
    if (o.mem_left_bytes >= 0 && bytes > max) {
      const std::string evicting =
          max > o.mem_left_bytes ? fmt::format(" ({} if it evicts the mapped weights' page cache)", format_bytes(max))
                                 : "";
      fail<ResourceExhausted>("{} does not fit the {}{}: {}", asked, left, evicting, at_most(max));
    }
    if (o.mem_left_bytes >= 0 && bytes > o.mem_left_bytes)
      r.warning = fmt::format(
          "{} is more than the {}: as it fills it evicts the mapped weights from the page cache, and steps then "
          "read them from disk",
          asked, left);
    if (o.mem_left_bytes >= 0) source += "; " + left;
  } else {
    // One group: the tokens of all contexts in whole blocks, as before groups.
    blocks = num_groups == 1 ? (int64_t(o.max_num_seqs) * o.context_len + o.block_size - 1) / o.block_size
                             : int64_t(o.max_num_seqs) * context_pages;
    source = fmt::format("default: {} seqs x {} tokens", o.max_num_seqs, o.context_len);
    const int64_t phys = o.physical_mem_bytes > 0 ? o.physical_mem_bytes : physical_memory_bytes();
    if (phys > 0) {
      const int64_t cap = phys / 4 / block_bytes;
      if (blocks > cap) {
        blocks = cap;
        source += fmt::format(", capped at 1/4 of {:.1f} GiB physical memory", double(phys) / (1 << 30));
      }
    }
    if (o.mem_left_bytes >= 0) {
      const int64_t share = int64_t(double(o.mem_left_bytes) * kDefaultKvShare) / block_bytes;
      if (share >= blocks) {
        source += "; " + left;
      } else {
        source =
            fmt::format("{:.0f}% of the {}; the default, {} seqs x {} tokens, would take {}", kDefaultKvShare * 100,
                        left, o.max_num_seqs, o.context_len, format_bytes(blocks * block_bytes));
        blocks = std::max<int64_t>(0, share);
        // Less than one context: no request of the model's length could run.
        if (blocks < context_pages)
          fail<ResourceExhausted>(
              "not enough memory for the KV cache: {:.0f}% of the {} holds {} tokens, less than one {}-token "
              "context ({}); {}",
              kDefaultKvShare * 100, left, blocks / num_groups * o.block_size, o.context_len,
              format_bytes(context_pages * block_bytes),
              o.mem_left_bytes < kMiB
                  ? at_most(o.mem_left_bytes)
                  : fmt::format("lower --max-model-len, or give --kv-cache-mem MIB (at most {}; a pool smaller "
                                "than a context limits the model length)",
                                o.mem_left_bytes / kMiB));
      }
    }
  }
  if (blocks > INT32_MAX / o.block_size) fail<InvalidArgument>("KV cache of {} blocks is too large", blocks);
  // A pool smaller than one context is allowed (tests and small machines use
  // one): the engine then lowers the maximum model length to the pool's size.
  if (blocks / num_groups * o.block_size < 2)
    fail<InvalidArgument>("KV cache of {} tokens ({}) is too small", blocks / num_groups * o.block_size, source);
  if (blocks < context_pages)
    source += fmt::format("; smaller than one {}-token context, so it limits the model length", o.context_len);
  r.num_blocks = int32_t(blocks);
  r.bytes = blocks * block_bytes;
  if (num_groups == 1) {
    r.summary = fmt::format("KV cache: {} blocks x {} tokens = {} tokens, {} ({})", r.num_blocks, o.block_size,
                            blocks * o.block_size, format_bytes(r.bytes), source);
  } else {
    const auto sliding = std::count_if(groups.windows.begin(), groups.windows.end(), [](int32_t w) { return w > 0; });
    r.summary = fmt::format(
        "KV cache: {} blocks x {} tokens in {} groups ({} sliding) = {} tokens of every layer, one {}-token context "
        "holds {} blocks, {} ({})",
        r.num_blocks, o.block_size, num_groups, sliding, blocks / num_groups * o.block_size, o.context_len,
        context_pages, format_bytes(r.bytes), source);
  }
  return r;
}

namespace {

// A slot is two buffers, and by default brings one checkpoint buffer.
int64_t slot_bytes(const StatePoolOptions& o) { return (o.state_checkpoints < 0 ? 3 : 2) * o.state_bytes; }
// --state-checkpoints N: that many buffers whatever the slots.
int64_t fixed_checkpoint_bytes(const StatePoolOptions& o) {
  return o.state_checkpoints > 0 ? o.state_checkpoints * o.state_bytes : 0;
}

}  // namespace

int64_t state_pool_needs_bytes(const StatePoolOptions& o) {
  if (o.state_bytes <= 0) return 0;
  return slot_bytes(o) * (o.state_slots > 0 ? o.state_slots : std::max<int64_t>(1, o.max_num_seqs)) +
         fixed_checkpoint_bytes(o);
}

StatePoolSize size_state_pool(const StatePoolOptions& o) {
  if (o.state_slots < 0) fail<InvalidArgument>("--state-slots must be >= 0, got {}", o.state_slots);
  if (o.state_checkpoints < -1)
    fail<InvalidArgument>("--state-checkpoints must be >= 0 (or -1: one per slot), got {}", o.state_checkpoints);
  StatePoolSize r;
  if (o.state_bytes <= 0) return r;
  const int64_t per_slot = slot_bytes(o), fixed = fixed_checkpoint_bytes(o);
  const std::string left =
      o.mem_left_bytes < 0 ? "" : format_bytes(std::max<int64_t>(0, o.mem_left_bytes)) + " " + o.mem_left_why;
  int64_t slots = 0;
  std::string source;
  if (o.state_slots > 0) {
    slots = o.state_slots;
    source = fmt::format("--state-slots {}", slots);
    if (o.mem_left_bytes >= 0 && slots * per_slot + fixed > o.mem_left_bytes)
      fail<ResourceExhausted>(
          "recurrent state: --state-slots {} x {} a slot{} = {} does not fit the {}: {}", slots, format_bytes(per_slot),
          fixed > 0 ? fmt::format(" + {} of checkpoints", format_bytes(fixed)) : "",
          format_bytes(slots * per_slot + fixed), left,
          fmt::format("give at most --state-slots {}", std::max<int64_t>(0, o.mem_left_bytes - fixed) / per_slot));
  } else {
    slots = std::max<int64_t>(1, o.max_num_seqs);
    source = fmt::format("default: one a sequence, --max-num-seqs {}", o.max_num_seqs);
    if (o.mem_left_bytes >= 0) {
      const int64_t share = (int64_t(double(o.mem_left_bytes) * kDefaultKvShare) - fixed) / per_slot;
      if (share < 1)
        fail<ResourceExhausted>(
            "not enough memory for the recurrent state: one slot takes {} ({} buffers of {}){}, {:.0f}% of the {} is "
            "{}",
            format_bytes(per_slot), per_slot / o.state_bytes, format_bytes(o.state_bytes),
            fixed > 0 ? fmt::format(" besides {} of checkpoints", format_bytes(fixed)) : "", kDefaultKvShare * 100,
            left, format_bytes(int64_t(double(o.mem_left_bytes) * kDefaultKvShare)));
      if (share < slots) {
        source += fmt::format(", capped at what {:.0f}% of the {} holds", kDefaultKvShare * 100, left);
        slots = share;
      }
    }
  }
  // Buffer ids are int32 (kv/types.h).
  const int64_t checkpoints = o.state_checkpoints < 0 ? slots : o.state_checkpoints;
  if (slots > INT32_MAX / 4 - 1 || checkpoints > INT32_MAX / 4 - 1)
    fail<InvalidArgument>("{} state slots and {} checkpoints are too many", slots, checkpoints);
  r.num_slots = int32_t(slots);
  r.num_checkpoints = int32_t(checkpoints);
  r.bytes = slots * 2 * o.state_bytes + checkpoints * o.state_bytes;
  r.summary = fmt::format(
      "recurrent state: {} slots x {} (two buffers of {}){} = {} ({}), taken before the KV cache", r.num_slots,
      format_bytes(2 * o.state_bytes), format_bytes(o.state_bytes),
      checkpoints > 0 ? fmt::format(" + {} prefix-cache checkpoints x {}", checkpoints, format_bytes(o.state_bytes))
                      : ", no prefix-cache checkpoints",
      format_bytes(r.bytes), source);
  return r;
}

}  // namespace pagoda
