// The prefix cache's index: a multimap from block hash to block id, as one
// flat open-addressing table (linear probing, backward-shift deletion, load at
// most 1/2). An update or a probe touches a cache line or two and never
// allocates; std::unordered_multimap's scattered nodes cost about ten cache
// misses per update on a pool of 10^6 blocks. Several blocks may share a hash
// (duplicates, collisions); the caller tells them apart by their full key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/types.h"

namespace pagoda {

class BlockHashIndex {
 public:
  explicit BlockHashIndex(int32_t max_entries);

  size_t size() const { return size_; }
  void insert(BlockHash hash, BlockId block);  // throws pagoda::Error when full
  bool erase(BlockHash hash, BlockId block);   // false when absent
  int32_t count(BlockHash hash, BlockId block) const;

  // Starts loading the slot where `hash` lives: lets a caller overlap the
  // cache misses of many independent updates.
  void prefetch(BlockHash hash) const { __builtin_prefetch(&slots_[home(hash)]); }

  // f(block) for every entry under `hash`.
  template <class F>
  void for_each(BlockHash hash, F&& f) const {
    for (size_t i = home(hash); slots_[i].block != kNoBlock; i = (i + 1) & mask_) {
      if (slots_[i].hash == hash) f(slots_[i].block);
    }
  }

  // f(hash, block) for every entry, in table order (for audit()).
  template <class F>
  void for_each_entry(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.block != kNoBlock) f(s.hash, s.block);
    }
  }

 private:
  struct Slot {
    BlockHash hash = 0;
    BlockId block = kNoBlock;
  };
  // Fibonacci hashing spreads even hashes that tests narrowed to a few bits.
  size_t home(BlockHash hash) const { return size_t((hash * 0x9e3779b97f4a7c15ull) >> shift_); }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

}  // namespace pagoda
