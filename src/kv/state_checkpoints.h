// Recurrent-state checkpoints: prefix caching for hybrid models.
//
// A cached prefix of a hybrid model (Gated DeltaNet, Mamba-style layers) is
// of use only with the recurrent state at its end, which no KV block holds.
// So at chosen block-aligned positions of a prompt the engine copies the
// sequence's committed state into a checkpoint buffer, keyed by the anchor
// block that ends the prefix (vLLM's approach for Mamba layers). A lookup
// then stops at the deepest cached block that has a checkpoint, and the new
// sequence starts from a copy of it.
//
// The cache is bounded (a fixed number of buffers, after the slots' buffers
// in the backend's state storage) and evicts the least recently used
// checkpoint. A checkpoint lives no longer than its block's hash: when the
// block is evicted the checkpoint goes with it, so a checkpoint always names
// a prefix the prefix cache can still prove (block ids and generations).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/types.h"

namespace pagoda {

// Where a prompt's state is checkpointed: every `interval` tokens, and at the
// prompt's last block boundaries, floor((n-1)/bs) and floor(n/bs) blocks (the
// one a repeat of the prompt looks up, and the one a longer prompt that
// starts with it does). Positions are > 0 and <= the prompt.
struct CheckpointPoints {
  int32_t interval = 0;  // tokens, a multiple of block_size; 0: no checkpoints
  int32_t block_size = 16;
  bool at(int32_t pos, int32_t num_prompt) const;
  // The first checkpoint position after `start`, or 0 when none is left.
  int32_t next(int32_t start, int32_t num_prompt) const;
};

class StateCheckpoints {
 public:
  // `capacity` buffers numbered first_buffer, first_buffer + 1, ...
  StateCheckpoints(int32_t capacity, StateBuffer first_buffer);

  int32_t capacity() const { return int32_t(entries_.size()); }
  int32_t size() const { return int32_t(by_block_.size()); }

  // The checkpoint of the prefix that ends with anchor block b, or kNoState.
  StateBuffer find(BlockId b) const;
  // A buffer for a new checkpoint of b (b in `generation`): a free one, else
  // the least recently used checkpoint's, which is evicted. kNoState when b
  // has one already or the capacity is 0.
  StateBuffer add(BlockId b, uint32_t generation);
  void touch(BlockId b);  // a hit: b's checkpoint is the most recently used
  void drop(BlockId b);   // b lost its hash; no-op without a checkpoint
  // Drops the checkpoint held in buffer `buffer` (its copy failed).
  void drop_buffer(StateBuffer buffer);

  struct Entry {
    BlockId block = kNoBlock;  // kNoBlock: a free buffer
    uint32_t generation = 0;   // the block's generation when checkpointed
    uint64_t used = 0;         // the tick of its last save or hit
  };
  const std::vector<Entry>& entries() const { return entries_; }
  StateBuffer buffer_of(size_t entry) const { return first_ + StateBuffer(entry); }

  int64_t saves() const { return saves_; }
  int64_t hits() const { return hits_; }
  int64_t evictions() const { return evictions_; }

  // The index against the entries: each held entry once, under its block. A
  // message naming the first contradiction, or nothing.
  std::optional<std::string> check() const;

 private:
  friend struct BlockManagerTestPeer;
  std::vector<Entry> entries_;
  std::unordered_map<BlockId, int32_t> by_block_;  // block -> its entry
  StateBuffer first_;
  uint64_t tick_ = 0;
  int64_t saves_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace pagoda
