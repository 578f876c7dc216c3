#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace pagoda::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const MaskTables> tables, size_t max_rollback)
    : tables_(std::move(tables)), max_rollback_(max_rollback), engine_(tables_->grammar()) {
  engine_.initial(state_);
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab)
    : GrammarMatcher(std::make_shared<const MaskTables>(std::move(grammar), std::move(vocab))) {}

void GrammarMatcher::remember() {
  if (max_rollback_ == 0) return;
  if (history_.size() == max_rollback_) history_.pop_front();
  history_.emplace_back(state_, terminated_);
}

bool GrammarMatcher::accept(int32_t token) {
  const TokenVocab& v = tables_->vocab();
  if (terminated_ || token < 0 || size_t(token) >= v.size()) return false;
  if (v.is_eog(token)) {
    if (!can_end()) return false;
    remember();
    terminated_ = true;
    return true;
  }
  const std::string& bytes = v.bytes(token);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  engine_.limit_steps();
  if (!engine_.accepts(state_, {p, bytes.size()}, next_, tmp_)) return false;
  remember();
  if (bytes.empty()) return true;
  state_ = bytes.size() % 2 == 1 ? next_ : tmp_;  // accepts() alternates between the two
  return true;
}

void GrammarMatcher::fill_mask(std::span<uint32_t> bits) {
  const size_t words = mask_words();
  if (bits.size() < words) fail<InvalidArgument>("mask of {} words, the vocabulary needs {}", bits.size(), words);
  std::memset(bits.data(), 0, bits.size() * sizeof(uint32_t));
  if (terminated_) return;
  roots_.clear();
  size_t steps_left = StackEngine::kMaxSteps;  // one mask's work, entries built included
  for (size_t i = 0; i < state_.size(); ++i) {
    const auto s = state_.stack(i);
    if (s.empty()) continue;
    // Stacks sharing a key share an entry; the set is sorted, so neighbours often do.
    const auto& e = tables_->entry(s, overflow_, steps_left);
    e.add_accepted_to(bits);
    roots_.insert(roots_.end(), e.uncertain.begin(), e.uncertain.end());
  }
  if (!roots_.empty()) {
    std::sort(roots_.begin(), roots_.end());
    roots_.erase(std::unique(roots_.begin(), roots_.end()), roots_.end());
    engine_.limit_steps(steps_left);
    walker_.walk_subtrees(engine_, tables_->vocab(), state_, roots_, bits);
  }
  if (state_.has_finished())
    for (int32_t id : tables_->vocab().eog()) bits[size_t(id) >> 5] |= 1u << (id & 31);
}

bool GrammarMatcher::rollback(size_t n) {
  if (n > history_.size()) return false;
  if (n == 0) return true;
  for (size_t i = 1; i < n; ++i) history_.pop_back();
  state_ = std::move(history_.back().first);
  terminated_ = history_.back().second;
  history_.pop_back();
  return true;
}

void GrammarMatcher::reset() {
  history_.clear();
  terminated_ = false;
  engine_.limit_steps();
  engine_.initial(state_);
}

}  // namespace pagoda::grammar
