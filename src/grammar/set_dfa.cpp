// Interning stack sets and memoizing their byte steps (see set_dfa.h).
#include "grammar/set_dfa.h"

namespace pagoda::grammar {

size_t SetDfa::Hash::operator()(const StackSet& s) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : s.data) h = (h ^ v) * 1099511628211ull;
  for (uint32_t v : s.begin) h = (h ^ (v + 0x9e37u)) * 1099511628211ull;
  return size_t(h);
}

void SetDfa::clear() {
  sets_.clear();
  finished_.clear();
  next_.clear();
  ids_.clear();
}

int32_t SetDfa::intern(const StackSet& s) {
  if (auto it = ids_.find(s); it != ids_.end()) return it->second;
  if (sets_.size() >= max_states_) return kFull;
  const auto id = int32_t(sets_.size());
  sets_.push_back(s);
  finished_.push_back(s.has_finished() ? 1 : 0);
  next_.resize(next_.size() + 256, kUnknown);
  ids_.emplace(s, id);
  return id;
}

int32_t SetDfa::step_slow(int32_t s, uint8_t b) {
  // advance() only reads sets_; intern() may grow it afterwards.
  if (!engine_->advance(sets_[size_t(s)], b, out_)) {
    next_[size_t(s) * 256 + b] = kDead;
    return kDead;
  }
  const int32_t t = intern(out_);
  if (t >= 0) next_[size_t(s) * 256 + b] = t;
  return t;
}

}  // namespace pagoda::grammar
