// The free block queue: an intrusive doubly linked list over block ids, kept in
// eviction order (the head is taken next). Every operation is O(1), including
// removing a block from the middle (a prefix-cache hit on a free cached block),
// and no operation allocates: the links live in one array indexed by block id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/types.h"

namespace pagoda {

class FreeBlockQueue {
 public:
  // Holds blocks 0..num_blocks-1, in id order.
  explicit FreeBlockQueue(int32_t num_blocks);

  int32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t capacity() const { return num_blocks_; }
  bool contains(BlockId b) const;

  BlockId front() const;  // the block pop_front() would return
  // The block after `b` (a member) toward the tail; kNoBlock past the tail.
  BlockId next(BlockId b) const {
    const BlockId n = links_[b].next;
    return n == sentinel() ? kNoBlock : n;
  }
  BlockId pop_front();  // throws pagoda::Error when empty
  void push_back(BlockId b);
  void push_front(BlockId b);
  void remove(BlockId b);  // from anywhere in the queue

  std::vector<BlockId> to_vector() const;  // head first

  // For audit(): walks the list from the head, marks each member in `member`
  // (sized capacity()) and counts them in `walked`; returns a description of
  // the first broken link, repeated block or stray link, if any.
  std::optional<std::string> check(std::vector<uint8_t>& member, int32_t& walked) const;

 private:
  friend struct BlockManagerTestPeer;
  static constexpr BlockId kDetached = -2;
  struct Links {
    BlockId prev = kDetached;
    BlockId next = kDetached;
  };

  BlockId sentinel() const { return num_blocks_; }
  void check_id(BlockId b, const char* op) const;
  void link_after(BlockId pos, BlockId b);

  int32_t num_blocks_ = 0;
  int32_t size_ = 0;
  std::vector<Links> links_;  // num_blocks + 1 entries; the last is the sentinel
};

}  // namespace pagoda
