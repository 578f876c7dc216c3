// The vocabulary of the KV block manager: ids of blocks, tokens, sequences,
// block hashes, and the block copies that copy-on-write asks the model to make.
#pragma once

#include <cstdint>

namespace pagoda {

using BlockId = int32_t;
using TokenId = int32_t;
using SeqId = uint64_t;
using BlockHash = uint64_t;

inline constexpr BlockId kNoBlock = -1;

// Copy the K/V bytes of block `src` into block `dst` before the forward pass
// that writes into `dst` (the manager owns ids, the model owns the bytes).
struct BlockCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  bool operator==(const BlockCopy&) const = default;
};

}  // namespace pagoda
