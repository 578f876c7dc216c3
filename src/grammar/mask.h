// Token masks: which vocabulary tokens keep the output a valid prefix of the
// grammar's language. Per (grammar, vocabulary) tables, computed lazily and
// shared by every matcher of that pair (thread-safe).
//
// The algorithm (after xgrammar's split of context-independent tokens):
//   - A matcher state is a set of stacks (stack_set.h). Whether a token is
//     valid from a stack depends mostly on the stack's top few frames. The
//     KEY of a stack is its top `context_frames` frames (the whole stack,
//     flagged complete, when it is not deeper than that).
//   - For each key met, once: walk the vocabulary trie (token_vocab.h) in
//     preorder from the key's frames alone, advancing a stack set byte by
//     byte per trie level, skipping any subtree whose prefix dies. A token is
//       ACCEPTED  if it is fully consumed with the set non-empty: valid from
//                 any stack with that key, whatever lies below;
//       UNCERTAIN if some proper prefix of it completed the key's frames (an
//                 empty stack) - what follows depends on the frames below,
//                 so the subtree is stored to be checked at run time;
//       REJECTED  otherwise: invalid from any stack with that key.
//   - fill_mask ORs the accepted sets of the state's keys, then walks the
//     stored uncertain subtrees (union over keys, in trie order, sharing
//     prefixes) from the real state, and sets the EOG ids if it may end.
//     The result equals trying every token's bytes through the matcher.
//   - precompute() builds the entry of every key the grammar can reach
//     (context_keys.h) at once, on several threads: call it on a request
//     worker after compiling, so no decode step pays for a first visit. The
//     walk memoizes set steps (set_dfa.h), so a key costs about one lookup
//     per trie node it visits.
//   - Entries are never evicted; past kMaxEntries, or when all tables of the
//     process together hold kMaxTotalBytes (many distinct grammars must not
//     exhaust memory), a key's entry is computed for the call and dropped
//     (correct, slower).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/set_dfa.h"
#include "grammar/stack_set.h"
#include "grammar/token_vocab.h"

namespace pagoda::grammar {

class MaskTables {
 public:
  static constexpr size_t kDefaultContextFrames = 3;
  static constexpr size_t kMaxEntries = 16384;                 // per table
  static constexpr size_t kMaxTotalBytes = size_t(512) << 20;  // over every table in the process

  // The accepted tokens are a bitset, or, when few (most keys: a literal
  // byte allows a handful of tokens), their ids: a quarter of the bytes at
  // most, so precomputing every key of a grammar stays small.
  struct Entry {
    std::vector<uint32_t> accepted;     // bitset over token ids (TokenVocab::mask_words()), or empty
    std::vector<int32_t> accepted_ids;  // when `accepted` is empty: the accepted ids
    std::vector<uint32_t> uncertain;    // trie subtree roots, preorder
    void add_accepted_to(std::span<uint32_t> bits) const;
  };

  // dfa_states bounds each entry build's memo (set_dfa.h); past it the build
  // advances sets directly (tests force that path with a tiny bound).
  MaskTables(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab,
             size_t context_frames = kDefaultContextFrames, size_t dfa_states = SetDfa::kDefaultMaxStates);
  ~MaskTables();
  MaskTables(const MaskTables&) = delete;
  MaskTables& operator=(const MaskTables&) = delete;

  const Grammar& grammar() const { return grammar_->grammar; }
  const CompiledGrammar& compiled() const { return *grammar_; }
  const TokenVocab& vocab() const { return *vocab_; }
  size_t context_frames() const { return context_frames_; }

  // The entry for a stack's key; `scratch` holds it when the table is full.
  // Building one spends at most `steps_left` parse steps (stack_set.h) and
  // takes them off; past that it throws InvalidArgument.
  const Entry& entry(std::span<const uint32_t> stack, Entry& scratch, size_t& steps_left) const;
  // Builds the entries of every reachable key not built yet, on `threads`
  // threads (the caller's included), within kMaxEntries, the memory budget
  // and max_seconds (a huge grammar must not hold its first request for
  // long: keys left over are built lazily). Returns the number built. A key
  // whose build throws (a grammar too ambiguous) is left to the lazy path,
  // which reports it.
  static constexpr double kPrecomputeSeconds = 3.0;
  size_t precompute(size_t threads = 1, double max_seconds = kPrecomputeSeconds) const;
  size_t num_entries() const;
  // The first error a precomputed entry's build met (a grammar too costly or
  // too ambiguous to match, the same for every request); empty if none.
  std::string build_error() const;
  // Bytes held by the entries of every live table in the process.
  static size_t total_bytes();

 private:
  struct KeyHash {
    size_t operator()(const std::vector<uint32_t>& k) const;
  };
  void compute(const std::vector<uint32_t>& key, Entry& out, StackEngine& engine, SetDfa& dfa) const;
  void compute_slow(const std::vector<uint32_t>& key, Entry& out, StackEngine& engine) const;
  // Moves key and e in unless the key is present (the stored entry is
  // returned) or the table is full (null; both left as they were).
  const Entry* insert(std::vector<uint32_t>& key, std::unique_ptr<Entry>& e) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  size_t context_frames_;
  size_t dfa_states_;
  mutable std::shared_mutex mu_;
  mutable std::unordered_map<std::vector<uint32_t>, std::unique_ptr<Entry>, KeyHash> entries_;
  mutable size_t bytes_ = 0;  // of entries_, counted in the process total
  mutable std::string build_error_;
};

// Walks trie nodes from a stack set: the runtime half of fill_mask, and the
// brute-force-free check of uncertain subtrees. Reuses its buffers.
class TrieWalker {
 public:
  // Sets the bit of every token in the subtrees `roots` (preorder, may
  // overlap) that is valid from `state`.
  void walk_subtrees(StackEngine& engine, const TokenVocab& vocab, const StackSet& state,
                     std::span<const uint32_t> roots, std::span<uint32_t> bits);

 private:
  std::vector<StackSet> levels_;
  std::string prefix_;  // bytes levels_[1..] were computed for
};

// Sets every logit whose token's bit is clear to -inf. Logits past the mask
// (a model's padded vocabulary) are masked too.
void apply_token_mask(std::span<float> logits, std::span<const uint32_t> bits);

}  // namespace pagoda::grammar
