// Closing stacks (expanding rule references until every top is a byte set)
// with an explicit worklist: no recursion, so deep grammars cannot overflow.
#include "grammar/stack_set.h"

#include <algorithm>
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

void StackEngine::close_all(StackSet& out) {
  const Grammar& g = *g_;
  size_t processed = 0;
  while (!work_.empty()) {
    const auto s = work_.stack(work_.size() - 1);
    cur_.assign(s.begin(), s.end());
    work_.data.resize(work_.begin[work_.size() - 1]);
    work_.begin.pop_back();
    if (++processed > kMaxStacks * 4)
      fail<InvalidArgument>("grammar too ambiguous: more than {} parse stacks", kMaxStacks);
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
