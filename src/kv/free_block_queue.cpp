// Circular doubly linked list with a sentinel at index num_blocks, so head and
// tail need no special cases. A detached block has both links = kDetached.
#include "kv/free_block_queue.h"

#include "util/error.h"

namespace pagoda {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks) : num_blocks_(num_blocks) {
  if (num_blocks < 0) fail<InvalidArgument>("a free block queue of {} blocks", num_blocks);
  links_.resize(size_t(num_blocks) + 1);
  for (BlockId b = 0; b < num_blocks; ++b) links_[b] = {b == 0 ? sentinel() : b - 1, b + 1};
  links_[sentinel()] = {num_blocks == 0 ? sentinel() : num_blocks - 1, num_blocks == 0 ? sentinel() : 0};
  size_ = num_blocks;
}

void FreeBlockQueue::check_id(BlockId b, const char* op) const {
  if (b < 0 || b >= num_blocks_) fail("free queue {}: block id {} outside [0, {})", op, b, num_blocks_);
}

bool FreeBlockQueue::contains(BlockId b) const { return b >= 0 && b < num_blocks_ && links_[b].next != kDetached; }

BlockId FreeBlockQueue::front() const {
  if (size_ == 0) fail("no free blocks available");
  return links_[sentinel()].next;
}

void FreeBlockQueue::link_after(BlockId pos, BlockId b) {
  BlockId next = links_[pos].next;
  links_[b] = {pos, next};
  links_[pos].next = b;
  links_[next].prev = b;
  ++size_;
}

void FreeBlockQueue::remove(BlockId b) {
  check_id(b, "remove");
  if (!contains(b)) fail("free queue remove: block {} is not in the queue", b);
  Links l = links_[b];
  links_[l.prev].next = l.next;
  links_[l.next].prev = l.prev;
  links_[b] = {};
  --size_;
}

BlockId FreeBlockQueue::pop_front() {
  BlockId b = front();
  remove(b);
  return b;
}

void FreeBlockQueue::push_back(BlockId b) {
  check_id(b, "push_back");
  if (contains(b)) fail("free queue push_back: block {} is already in the queue", b);
  link_after(links_[sentinel()].prev, b);
}

void FreeBlockQueue::push_front(BlockId b) {
  check_id(b, "push_front");
  if (contains(b)) fail("free queue push_front: block {} is already in the queue", b);
  link_after(sentinel(), b);
}

std::vector<BlockId> FreeBlockQueue::to_vector() const {
  std::vector<BlockId> out;
  out.reserve(size_t(size_));
  for (BlockId b = links_[sentinel()].next; b != sentinel() && out.size() <= size_t(num_blocks_); b = links_[b].next) {
    out.push_back(b);
  }
  return out;
}

std::optional<std::string> FreeBlockQueue::check(std::vector<uint8_t>& member, int32_t& walked) const {
  member.assign(size_t(num_blocks_), 0);
  walked = 0;
  BlockId prev = sentinel();
  for (BlockId b = links_[sentinel()].next; b != sentinel(); prev = b, b = links_[b].next) {
    if (b < 0 || b >= num_blocks_) {
      return fmt::format("free queue links block {} to {}, outside [0, {})", prev, b, num_blocks_);
    }
    if (member[b]) return fmt::format("free queue holds block {} twice", b);
    if (links_[b].prev != prev) {
      return fmt::format("free queue: block {} follows {} but its back link names {}", b, prev, links_[b].prev);
    }
    member[b] = 1;
    ++walked;
  }
  if (links_[sentinel()].prev != prev) {
    return fmt::format("free queue: tail is {} but the head's back link names {}", prev, links_[sentinel()].prev);
  }
  for (BlockId b = 0; b < num_blocks_; ++b) {
    if (!member[b] && (links_[b].next != kDetached || links_[b].prev != kDetached)) {
      return fmt::format("block {} is not reachable in the free queue but still has links", b);
    }
  }
  return std::nullopt;
}

}  // namespace pagoda
