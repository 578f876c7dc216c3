#include "kv/state_slots.h"

#include <fmt/format.h>

#include "util/error.h"

namespace pagoda {

StateSlotPool::StateSlotPool(int32_t num_slots) {
  if (num_slots < 0) fail<InvalidArgument>("the number of state slots must be >= 0, got {}", num_slots);
  // Buffer ids are int32: 2 * slots + 1 must fit.
  if (num_slots > INT32_MAX / 2 - 1) fail<InvalidArgument>("{} state slots are too many", num_slots);
  taken_.assign(size_t(num_slots), 0);
  free_.reserve(size_t(num_slots));
  for (StateSlot s = num_slots; s-- > 0;) free_.push_back(s);  // slot 0 is taken first
}

StateSlot StateSlotPool::take() {
  if (free_.empty()) return kNoSlot;
  const StateSlot s = free_.back();
  free_.pop_back();
  taken_[size_t(s)] = 1;
  return s;
}

void StateSlotPool::give(StateSlot slot) {
  if (!taken(slot)) fail("state slot {} given back but not taken", slot);
  taken_[size_t(slot)] = 0;
  free_.push_back(slot);
}

std::optional<std::string> StateSlotPool::check() const {
  std::vector<uint8_t> listed(taken_.size(), 0);
  for (StateSlot s : free_) {
    if (s < 0 || s >= size()) return fmt::format("the free list names slot {}, outside the pool of {}", s, size());
    if (listed[size_t(s)]) return fmt::format("slot {} is on the free list twice", s);
    if (taken_[size_t(s)]) return fmt::format("slot {} is on the free list but taken", s);
    listed[size_t(s)] = 1;
  }
  for (StateSlot s = 0; s < size(); ++s)
    if (!taken_[size_t(s)] && !listed[size_t(s)]) return fmt::format("slot {} is neither taken nor free", s);
  return std::nullopt;
}

}  // namespace pagoda
