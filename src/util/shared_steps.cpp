#include "util/shared_steps.h"

#include <algorithm>

namespace pagoda {
namespace {

constexpr uint32_t front_of(uint64_t v) { return uint32_t(v >> 32); }
constexpr uint32_t back_of(uint64_t v) { return uint32_t(v); }
constexpr uint64_t pack(uint32_t front, uint32_t back) { return uint64_t(front) << 32 | back; }
constexpr uint32_t kFrontShare = 4;  // an owner's run: this share of its steps left

}  // namespace

SharedSteps::SharedSteps(size_t parts, uint32_t steps) : parts_(parts), ranges_(new Range[parts]) {
  for (size_t p = 0; p < parts; ++p) ranges_[p].v.store(pack(0, steps), std::memory_order_relaxed);
}

std::optional<std::pair<uint32_t, uint32_t>> SharedSteps::take_front(size_t part) {
  auto& v = ranges_[part].v;
  uint64_t cur = v.load(std::memory_order_relaxed);
  while (front_of(cur) < back_of(cur)) {
    const uint32_t end = front_of(cur) + std::max<uint32_t>(1, (back_of(cur) - front_of(cur)) / kFrontShare);
    if (v.compare_exchange_weak(cur, pack(end, back_of(cur)), std::memory_order_relaxed))
      return std::pair{front_of(cur), end};
  }
  return std::nullopt;
}

std::optional<std::pair<size_t, uint32_t>> SharedSteps::take_back() {
  for (;;) {
    size_t best = parts_;
    uint32_t most = 0;
    for (size_t p = 0; p < parts_; ++p) {
      const uint64_t cur = ranges_[p].v.load(std::memory_order_relaxed);
      if (back_of(cur) - front_of(cur) > most) {  // front never passes back
        most = back_of(cur) - front_of(cur);
        best = p;
      }
    }
    if (best == parts_) return std::nullopt;
    auto& v = ranges_[best].v;
    uint64_t cur = v.load(std::memory_order_relaxed);
    while (front_of(cur) < back_of(cur))
      if (v.compare_exchange_weak(cur, pack(front_of(cur), back_of(cur) - 1), std::memory_order_relaxed))
        return std::pair{best, back_of(cur) - 1};
    // That part ran out meanwhile: look again.
  }
}

}  // namespace pagoda
