// The byte-level recognizer under the matcher: a set of parse stacks, the
// way llama.cpp's grammar engine works, kept flat so advancing allocates
// nothing once warm.
//
// Contract:
//   - A stack is a list of grammar positions (indices into Grammar::elems),
//     bottom first. Its top is always a byte-set element (the next byte it
//     needs); the frames below are return positions in the callers. An
//     empty stack means "the root (or, for mask tables, the context the stack
//     started from) is complete".
//   - A StackSet is the matcher state: the input so far is a valid prefix
//     iff the set is non-empty; it may end iff it holds an empty stack.
//   - Calling a rule whose reference is the last element of an alternative
//     replaces the caller's frame (a tail call), so right recursion (x*, the
//     repetition chains) never grows the stack. Left recursion is rejected
//     when the grammar is built, so closing a stack always terminates.
//   - Closing skips a work item identical to one already expanded in the
//     same closure (it would expand identically), so a chain of nullable
//     rules (x*x*x*..., (x?){n}) closes in time linear in its length.
//   - Stacks deeper than kMaxDepth frames are dropped (input nested that deep
//     is refused), and a set above kMaxStacks stacks throws InvalidArgument
//     (a grammar too ambiguous to match in bounded time).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace pagoda::grammar {

struct StackSet {
  std::vector<uint32_t> data;
  std::vector<uint32_t> begin{0};  // stack i is data[begin[i], begin[i+1])

  size_t size() const { return begin.size() - 1; }
  bool empty() const { return size() == 0; }
  std::span<const uint32_t> stack(size_t i) const { return {data.data() + begin[i], data.data() + begin[i + 1]}; }
  void clear() {
    data.clear();
    begin.assign(1, 0);
  }
  void push(std::span<const uint32_t> s) {
    data.insert(data.end(), s.begin(), s.end());
    begin.push_back(uint32_t(data.size()));
  }
  bool has_finished() const;  // holds an empty stack
  bool operator==(const StackSet&) const = default;
};

class StackEngine {
 public:
  static constexpr size_t kMaxDepth = 4096;
  static constexpr size_t kMaxStacks = 20000;

  explicit StackEngine(const Grammar& g) : g_(&g) {}

  // The closed stacks at the start of the root rule.
  void initial(StackSet& out);
  // `frames` closed (its top may be any position).
  void from_frames(std::span<const uint32_t> frames, StackSet& out);
  // out = every stack of `in` whose top admits b, advanced past it and
  // closed, duplicates removed. Returns !out.empty().
  bool advance(const StackSet& in, uint8_t b, StackSet& out);
  // Whether `bytes` can follow `in` (scratch sets a and b are clobbered).
  bool accepts(const StackSet& in, std::span<const uint8_t> bytes, StackSet& a, StackSet& b);

  const Grammar& grammar() const { return *g_; }

  // Work is bounded per call of the caller's choosing (one mask, one
  // token): each closure step and each stack sorted counts, and past the
  // limit set here InvalidArgument is thrown, so a grammar too costly to
  // match fails its own request instead of holding the engine for seconds.
  static constexpr size_t kMaxSteps = 25000000;  // ~0.25 s; a nested JSON schema needs ~10^5
  void limit_steps(size_t limit = kMaxSteps) {
    steps_ = 0;
    step_limit_ = limit;
  }
  size_t steps() const { return steps_; }

 private:
  void charge(size_t steps);
  void close_all(StackSet& out);  // closes the stacks in work_ into out
  void dedupe(StackSet& s);
  bool seen_before(std::span<const uint32_t> item);  // records item in this closure's seen set

  // The seen set: open addressing over items stored back to back in
  // seen_data_; a slot is live when its stamp is this closure's generation,
  // so starting a closure costs nothing.
  struct SeenSlot {
    uint32_t generation = 0, begin = 0, size = 0;
    uint64_t hash = 0;
  };

  const Grammar* g_;
  StackSet work_;
  std::vector<uint32_t> cur_;
  std::vector<uint32_t> order_;
  StackSet tmp_;
  std::vector<SeenSlot> seen_slots_;
  std::vector<uint32_t> seen_data_;
  size_t seen_count_ = 0;
  uint32_t generation_ = 0;
  size_t steps_ = 0, step_limit_ = SIZE_MAX;  // unbounded until limit_steps()
};

}  // namespace pagoda::grammar
