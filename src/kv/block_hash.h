// Chained 64-bit hashes of full KV blocks for prefix caching. A block's hash
// covers its parent's hash, its own token ids and an extra key (the cache
// salt), so equal hashes mean "probably the same prefix". Probably: the block
// manager confirms every hit against the block's stored key before reuse.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kv/types.h"

namespace pagoda {

// The parent hash of a sequence's first block. Fixed, so hashes are
// reproducible across runs (they never leave the process).
inline constexpr BlockHash kRootBlockHash = 0x5061676f64614b56ull;  // "PagodaKV"

// Hash of an extra key; 0 for the empty key (no salt).
uint64_t hash_extra_key(std::string_view extra_key);

// Hash of one block: its parent's hash, its token ids, its extra key's hash.
BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> tokens, uint64_t extra_key_hash);

}  // namespace pagoda
