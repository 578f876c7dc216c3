// A memo of StackEngine::advance for one mask-table walk: stack sets are
// interned to state ids and each (state, byte) step is computed once, so a
// trie walk that loops through the same few sets (string characters, digits,
// whitespace) costs an array lookup per trie node instead of a set advance.
//
// Contract:
//   - step(s, b) is the id of engine.advance(set(s), b), or kDead when that
//     set is empty; identical sets get the same id.
//   - At most max_states states are kept (a dense 256-entry row each, 1 KiB);
//     a step that would add one more returns kFull, and the caller falls back
//     to advancing sets itself. clear() empties the memo, keeping capacity.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/stack_set.h"

namespace pagoda::grammar {

class SetDfa {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kFull = -2;
  static constexpr size_t kDefaultMaxStates = 4096;

  explicit SetDfa(StackEngine& engine, size_t max_states = kDefaultMaxStates)
      : engine_(&engine), max_states_(max_states) {}

  void clear();
  // The id of `s` (interned); kFull when the memo is full.
  int32_t intern(const StackSet& s);
  int32_t step(int32_t s, uint8_t b) {
    const int32_t t = next_[size_t(s) * 256 + b];
    return t != kUnknown ? t : step_slow(s, b);
  }
  bool finished(int32_t s) const { return finished_[size_t(s)] != 0; }
  size_t num_states() const { return sets_.size(); }

 private:
  static constexpr int32_t kUnknown = -3;
  struct Hash {
    size_t operator()(const StackSet& s) const;
  };
  int32_t step_slow(int32_t s, uint8_t b);

  StackEngine* engine_;
  size_t max_states_;
  std::vector<StackSet> sets_;     // state id -> set
  std::vector<uint8_t> finished_;  // state id -> set holds an empty stack
  std::vector<int32_t> next_;      // [state][256]: next id, kDead or kUnknown
  std::unordered_map<StackSet, int32_t, Hash> ids_;
  StackSet out_;
};

}  // namespace pagoda::grammar
