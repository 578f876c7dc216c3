// The vocabulary of the KV block manager: ids of blocks, tokens, sequences,
// block hashes, the block copies that copy-on-write asks the model to make,
// and the element type of the K/V bytes the model keeps in those blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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

// Recurrent state (hybrid models: Gated DeltaNet, Mamba-style layers). A
// sequence holds one state slot for its life; each slot has two buffers, so a
// pass reads the committed state from one and writes the next into the other:
// a failed pass leaves the committed state as it was, and a retry starts over.
// Buffer ids: slot s owns buffers 2s and 2s + 1. kNoState: read zeros (the
// sequence's first token is in the pass).
using StateBuffer = int32_t;
inline constexpr StateBuffer kNoState = -1;

// Copy one state buffer into another before the forward pass (a fork: the
// child starts from its parent's committed state).
struct StateCopy {
  StateBuffer src = kNoState;
  StateBuffer dst = kNoState;
  bool operator==(const StateCopy&) const = default;
};

// F32 (the default) or F16: half the memory (--kv-type).
enum class KvType { F32, F16 };
KvType kv_type_from_name(std::string_view name);  // "f32" | "f16", InvalidArgument otherwise
size_t kv_type_bytes(KvType t);

}  // namespace pagoda
