// GrammarMatcher: one request's position in a grammar, token by token.
//
// Contract:
//   - accept(id) advances by the token's bytes (TokenVocab::bytes) and
//     returns true, or returns false and leaves the state unchanged. An
//     end-of-generation id is accepted only where can_end(), and then the
//     matcher is terminated: it accepts nothing more. Tokens with no bytes
//     that are not EOG are never accepted.
//   - fill_mask(bits) writes exactly the set of tokens accept() would take
//     now (mask.h describes how), over TokenVocab::mask_words() words.
//   - The state is a value: copying a matcher forks it (n > 1 samples,
//     beam-like search), and it can be rebuilt after preemption by replaying
//     the generated tokens through accept(). rollback(n) undoes the last n
//     accepted tokens while they are within the history kept (max_rollback).
//   - One matcher is not thread-safe; matchers sharing MaskTables are, with
//     each other.
//
// For the engine, per step of a constrained sequence:
//     matcher.fill_mask(bits);                  // bits: mask_words() words
//     apply_token_mask(logits, bits);           // mask.h: -inf for masked
//     id = sample(logits); matcher.accept(id);  // true by construction
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>

#include "grammar/mask.h"
#include "grammar/stack_set.h"

namespace pagoda::grammar {

class GrammarMatcher {
 public:
  static constexpr size_t kDefaultMaxRollback = 16;

  explicit GrammarMatcher(std::shared_ptr<const MaskTables> tables, size_t max_rollback = kDefaultMaxRollback);
  // Convenience: private tables for this grammar and vocabulary (no sharing).
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab);

  bool accept(int32_t token);
  // Advances by raw bytes (tests, forced prefixes); one rollback step.
  bool accept_bytes(std::string_view bytes);
  bool can_end() const { return !terminated_ && state_.has_finished(); }
  bool is_terminated() const { return terminated_; }

  size_t mask_words() const { return tables_->vocab().mask_words(); }
  // InvalidArgument if bits is smaller than mask_words().
  void fill_mask(std::span<uint32_t> bits);

  // Undoes the last n accepted steps; false (and nothing undone) if fewer
  // than n are kept.
  bool rollback(size_t n);
  void reset();

  const StackSet& state() const { return state_; }
  const MaskTables& tables() const { return *tables_; }

 private:
  void remember();

  std::shared_ptr<const MaskTables> tables_;
  size_t max_rollback_;
  StackEngine engine_;
  StackSet state_, next_, tmp_;
  bool terminated_ = false;
  std::deque<std::pair<StackSet, bool>> history_;
  // Scratch for fill_mask.
  TrieWalker walker_;
  MaskTables::Entry overflow_;
  std::vector<uint32_t> roots_;
};

}  // namespace pagoda::grammar
