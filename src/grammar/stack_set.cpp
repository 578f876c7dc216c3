// Closing stacks (expanding rule references until every top is a byte set)
// with an explicit worklist: no recursion, so deep grammars cannot overflow.
#include "grammar/stack_set.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "util/error.h"

namespace pagoda::grammar {

bool StackSet::has_finished() const {
  for (size_t i = 0; i + 1 < begin.size(); ++i)
    if (begin[i] == begin[i + 1]) return true;
  return false;
}

void StackEngine::initial(StackSet& out) {
  const Grammar& g = *g_;
  work_.clear();
  for (uint32_t a = g.rule_alts[g.root]; a < g.rule_alts[g.root + 1]; ++a) {
    const uint32_t p = g.alt_begin[a];
    work_.push({&p, 1});
  }
  out.clear();
  close_all(out);
  dedupe(out);
}

void StackEngine::from_frames(std::span<const uint32_t> frames, StackSet& out) {
  work_.clear();
  work_.push(frames);
  out.clear();
  close_all(out);
  dedupe(out);
}

bool StackEngine::seen_before(std::span<const uint32_t> item) {
  if (seen_count_ * 2 >= seen_slots_.size()) {  // grow (or start): rehash this closure's items
    std::vector<SeenSlot> old(std::max<size_t>(64, seen_slots_.size() * 2));
    std::swap(old, seen_slots_);
    for (const SeenSlot& o : old) {
      if (o.generation != generation_) continue;
      size_t i = o.hash & (seen_slots_.size() - 1);
      while (seen_slots_[i].generation == generation_) i = (i + 1) & (seen_slots_.size() - 1);
      seen_slots_[i] = o;
    }
  }
  uint64_t h = item.size();
  for (const uint32_t x : item) h = (h ^ x) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  for (size_t i = h & (seen_slots_.size() - 1);; i = (i + 1) & (seen_slots_.size() - 1)) {
    SeenSlot& slot = seen_slots_[i];
    if (slot.generation != generation_) {
      slot = {generation_, uint32_t(seen_data_.size()), uint32_t(item.size()), h};
      seen_data_.insert(seen_data_.end(), item.begin(), item.end());
      ++seen_count_;
      return false;
    }
    if (slot.hash == h && std::equal(item.begin(), item.end(), seen_data_.begin() + slot.begin,
                                     seen_data_.begin() + slot.begin + slot.size))
      return true;
  }
}

void StackEngine::charge(size_t steps) {
  steps_ += steps;
  if (steps_ > step_limit_)
    fail<InvalidArgument>(
        "grammar too costly to match: one token needs more parse work than allowed (simplify the pattern or schema)");
}

void StackEngine::close_all(StackSet& out) {
  const Grammar& g = *g_;
  // Most closures are a handful of items: the seen set starts after a few.
  constexpr size_t kSeenAfter = 8;
  if (++generation_ == 0) {  // wrapped: no slot may look live
    std::fill(seen_slots_.begin(), seen_slots_.end(), SeenSlot{});
    generation_ = 1;
  }
  seen_data_.clear();
  seen_count_ = 0;
  size_t processed = 0;
  while (!work_.empty()) {
    const auto s = work_.stack(work_.size() - 1);
    cur_.assign(s.begin(), s.end());
    work_.data.resize(work_.begin[work_.size() - 1]);
    work_.begin.pop_back();
    if (++processed > kMaxStacks * 4)
      fail<InvalidArgument>("grammar too ambiguous: more than {} parse stacks", kMaxStacks);
    charge(1);
    if (processed > kSeenAfter && seen_before(cur_)) continue;
    for (;;) {
      if (cur_.empty()) {
        out.push(cur_);
        break;
      }
      const uint32_t p = cur_.back();
      const Element e = g.elems[p];
      if (e.kind == Element::Kind::Bytes) {
        out.push(cur_);
        break;
      }
      cur_.pop_back();
      if (e.kind == Element::Kind::End) continue;                            // return to the caller's position
      if (g.elems[p + 1].kind != Element::Kind::End) cur_.push_back(p + 1);  // else: tail call
      if (cur_.size() >= kMaxDepth) break;
      const uint32_t a0 = g.rule_alts[e.id], a1 = g.rule_alts[e.id + 1];
      for (uint32_t a = a1; a-- > a0;) {  // pushed in reverse: the first alternative closes first
        work_.data.insert(work_.data.end(), cur_.begin(), cur_.end());
        work_.data.push_back(g.alt_begin[a]);
        work_.begin.push_back(uint32_t(work_.data.size()));
      }
      break;
    }
  }
  if (out.size() > kMaxStacks) fail<InvalidArgument>("grammar too ambiguous: more than {} parse stacks", kMaxStacks);
}

void StackEngine::dedupe(StackSet& s) {
  if (s.size() < 2) return;
  charge(s.size() * std::bit_width(s.size()));
  order_.resize(s.size());
  std::iota(order_.begin(), order_.end(), 0u);
  auto less = [&](uint32_t x, uint32_t y) {
    const auto a = s.stack(x), b = s.stack(y);
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  };
  std::sort(order_.begin(), order_.end(), less);
  tmp_.clear();
  for (size_t i = 0; i < order_.size(); ++i) {
    const auto cur = s.stack(order_[i]);
    if (i > 0) {
      const auto prev = s.stack(order_[i - 1]);
      if (std::equal(cur.begin(), cur.end(), prev.begin(), prev.end())) continue;
    }
    tmp_.push(cur);
  }
  std::swap(s, tmp_);
}

bool StackEngine::advance(const StackSet& in, uint8_t b, StackSet& out) {
  const Grammar& g = *g_;
  work_.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const auto s = in.stack(i);
    if (s.empty()) continue;
    const Element e = g.elems[s.back()];
    if (!g.sets[e.id].test(b)) continue;
    work_.data.insert(work_.data.end(), s.begin(), s.end());
    work_.data.back() += 1;
    work_.begin.push_back(uint32_t(work_.data.size()));
  }
  out.clear();
  close_all(out);
  dedupe(out);
  return !out.empty();
}

bool StackEngine::accepts(const StackSet& in, std::span<const uint8_t> bytes, StackSet& a, StackSet& b) {
  const StackSet* from = &in;
  for (size_t i = 0; i < bytes.size(); ++i) {
    StackSet& to = (i % 2 == 0) ? a : b;
    if (!advance(*from, bytes[i], to)) return false;
    from = &to;
  }
  return !from->empty();
}

}  // namespace pagoda::grammar
