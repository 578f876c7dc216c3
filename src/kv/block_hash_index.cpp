// Linear probing with backward-shift deletion: erasing moves later entries of
// the cluster back into the hole, so no tombstones pile up and every entry
// stays reachable from its home slot without a gap.
#include "kv/block_hash_index.h"

#include "util/error.h"

namespace pagoda {

BlockHashIndex::BlockHashIndex(int32_t max_entries) {
  size_t capacity = 8;
  int bits = 3;
  while (capacity < 2 * size_t(max_entries > 0 ? max_entries : 0)) capacity *= 2, ++bits;
  slots_.resize(capacity);
  mask_ = capacity - 1;
  shift_ = 64 - bits;
}

void BlockHashIndex::insert(BlockHash hash, BlockId block) {
  if (2 * (size_ + 1) > slots_.size()) fail("block hash index full: {} entries", size_);
  size_t i = home(hash);
  while (slots_[i].block != kNoBlock) i = (i + 1) & mask_;
  slots_[i] = {hash, block};
  ++size_;
}

bool BlockHashIndex::erase(BlockHash hash, BlockId block) {
  size_t i = home(hash);
  for (;; i = (i + 1) & mask_) {
    if (slots_[i].block == kNoBlock) return false;
    if (slots_[i].hash == hash && slots_[i].block == block) break;
  }
  // Shift back each later entry of the cluster whose home is not in (i, j].
  for (size_t j = (i + 1) & mask_; slots_[j].block != kNoBlock; j = (j + 1) & mask_) {
    const size_t k = home(slots_[j].hash);
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = {};
  --size_;
  return true;
}

int32_t BlockHashIndex::count(BlockHash hash, BlockId block) const {
  int32_t n = 0;
  for_each(hash, [&](BlockId b) { n += b == block; });
  return n;
}

}  // namespace pagoda
