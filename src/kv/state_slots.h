// The recurrent-state slot pool (kv/types.h): which of N slots are free. A
// slot holds one sequence's state for its life, in two buffers (2s, 2s + 1).
// The block manager owns the pool and says which sequence holds which slot;
// this class only hands slots out and takes them back, and checks its own
// bookkeeping for audit().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/types.h"

namespace pagoda {

using StateSlot = int32_t;
inline constexpr StateSlot kNoSlot = -1;

// Buffer i (0 or 1) of a slot, the slot of a buffer, and the buffer a pass
// writes when it reads `current` (kNoState: the slot's first buffer).
inline StateBuffer state_buffer(StateSlot slot, int32_t i) { return 2 * slot + i; }
inline StateSlot slot_of(StateBuffer buffer) { return buffer / 2; }
inline StateBuffer next_buffer(StateSlot slot, StateBuffer current) {
  return current == kNoState ? state_buffer(slot, 0) : (current ^ 1);
}

class StateSlotPool {
 public:
  explicit StateSlotPool(int32_t num_slots);

  int32_t size() const { return int32_t(taken_.size()); }
  int32_t num_free() const { return int32_t(free_.size()); }
  int32_t num_used() const { return size() - num_free(); }
  bool taken(StateSlot slot) const { return slot >= 0 && slot < size() && taken_[size_t(slot)]; }

  // A free slot, or kNoSlot when none is left. The lowest slot given back
  // most recently goes first (a stack: its buffers are warm in cache).
  StateSlot take();
  // Back to the pool; a slot that is not taken is a bug (pagoda::Error).
  void give(StateSlot slot);

  // The free list against the taken flags: every slot exactly once in one of
  // them. A message naming the first contradiction, or nothing.
  std::optional<std::string> check() const;

 private:
  friend struct BlockManagerTestPeer;
  std::vector<StateSlot> free_;  // a stack, next taken last
  std::vector<uint8_t> taken_;
};

}  // namespace pagoda
