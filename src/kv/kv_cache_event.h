// What the block manager records, when asked to, about the prefix cache's
// contents, for whoever mirrors them outside the process (the KV events that
// llm-d and Dynamo route by). The events are per distinct hash: "stored"
// when a hash enters the prefix cache (no block held it), "removed" when the
// last block under it loses it (evicted for reuse), "all cleared" when the
// cache is reset. Replaying them in order gives exactly the set of hashes the
// cache holds. Hashes are the manager's chained block hashes (block_hash.h):
// stable within a process, not across versions of Pagoda.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/types.h"

namespace pagoda {

struct KvCacheEvent {
  enum class Kind : uint8_t { kStored, kRemoved, kAllCleared };
  Kind kind = Kind::kStored;
  BlockHash hash = 0;               // stored, removed
  std::optional<BlockHash> parent;  // stored: the previous block's hash; none for a chain's first block
  std::vector<TokenId> tokens;      // stored: the block's block_size token ids
};

}  // namespace pagoda
