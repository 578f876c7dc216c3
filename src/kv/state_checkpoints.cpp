#include "kv/state_checkpoints.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/error.h"

namespace pagoda {

bool CheckpointPoints::at(int32_t pos, int32_t num_prompt) const {
  if (interval <= 0 || pos <= 0 || pos > num_prompt || pos % block_size != 0) return false;
  return pos % interval == 0 || pos == (num_prompt - 1) / block_size * block_size ||
         pos == num_prompt / block_size * block_size;
}

int32_t CheckpointPoints::next(int32_t start, int32_t num_prompt) const {
  if (interval <= 0) return 0;
  int32_t best = 0;
  auto consider = [&](int32_t p) {
    if (p > start && p <= num_prompt && (best == 0 || p < best)) best = p;
  };
  consider((start / interval + 1) * interval);
  consider((num_prompt - 1) / block_size * block_size);
  consider(num_prompt / block_size * block_size);
  return best;
}

StateCheckpoints::StateCheckpoints(int32_t capacity, StateBuffer first_buffer)
    : entries_(size_t(std::max(0, capacity))), first_(first_buffer) {
  if (capacity < 0) fail<InvalidArgument>("state checkpoints must be >= 0, got {}", capacity);
}

StateBuffer StateCheckpoints::find(BlockId b) const {
  const auto it = by_block_.find(b);
  return it == by_block_.end() ? kNoState : buffer_of(size_t(it->second));
}

StateBuffer StateCheckpoints::add(BlockId b, uint32_t generation) {
  if (entries_.empty() || by_block_.count(b)) return kNoState;
  // A free buffer, else the least recently used checkpoint's.
  size_t at = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].block == kNoBlock) {
      at = i;
      break;
    }
    if (entries_[i].used < entries_[at].used) at = i;
  }
  Entry& e = entries_[at];
  if (e.block != kNoBlock) {
    by_block_.erase(e.block);
    ++evictions_;
  }
  e = {b, generation, ++tick_};
  by_block_[b] = int32_t(at);
  ++saves_;
  return buffer_of(at);
}

void StateCheckpoints::touch(BlockId b) {
  const auto it = by_block_.find(b);
  if (it == by_block_.end()) return;
  entries_[size_t(it->second)].used = ++tick_;
  ++hits_;
}

void StateCheckpoints::drop(BlockId b) {
  const auto it = by_block_.find(b);
  if (it == by_block_.end()) return;
  entries_[size_t(it->second)] = Entry{};
  by_block_.erase(it);
}

void StateCheckpoints::drop_buffer(StateBuffer buffer) {
  const StateBuffer i = buffer - first_;
  if (i >= 0 && i < StateBuffer(entries_.size()) && entries_[size_t(i)].block != kNoBlock)
    drop(entries_[size_t(i)].block);
}

std::optional<std::string> StateCheckpoints::check() const {
  size_t held = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.block == kNoBlock) continue;
    ++held;
    const auto it = by_block_.find(e.block);
    if (it == by_block_.end() || it->second != int32_t(i))
      return fmt::format("checkpoint {} of block {} is not indexed under it", i, e.block);
  }
  if (held != by_block_.size()) return fmt::format("{} checkpoints indexed, {} held", by_block_.size(), held);
  return std::nullopt;
}

}  // namespace pagoda
