// Constrained decoding in the step: one sequence's grammar matcher and the
// token mask it allows next, and the batch-wide mask fill.
//
// Contract:
//   - A constrained sequence owns a SeqConstraint from its first sample to
//     its end: it survives preemption and recompute unchanged (the tokens
//     it has accepted are kept with the sequence, so nothing is replayed),
//     and a fork copies it (n > 1: every choice starts from the same state).
//   - fill_masks() fills each given constraint's mask from its matcher's
//     state; it never throws: a failure (a grammar too ambiguous to match)
//     is left in `error`, for the engine to end that one request with.
//   - mask_logits() writes the logits with every disallowed token at -inf
//     (before penalties, top-k and top-p, so logprobs are of the masked
//     distribution); false when the grammar allows no token at all.
//   - finished() is true when the output is complete and nothing may follow:
//     the sequence stops there without waiting for an end-of-generation token.
//   - A lazy constraint (Request::constraint_after) is inactive until
//     observe() has seen its trigger text in the output: no mask, no
//     accepting, never finished; then it is an ordinary one.
//   - A gated one (Request::constraint_gate, a qwen3 model that may or may
//     not open "<think>") first masks to the grammar's tokens plus those
//     that keep the output a possible opening of the gate text; gate_step()
//     then waits for the trigger once the gate opened, or activates the
//     grammar at once on a token of the grammar's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/matcher.h"

namespace pagoda {

class ThreadPool;

struct SeqConstraint {
  explicit SeqConstraint(std::shared_ptr<const grammar::MaskTables> tables, std::string after = {},
                         std::string gate = {})
      : matcher(std::move(tables), /*max_rollback=*/0), after(std::move(after)), gate(std::move(gate)) {
    if (this->after.empty()) this->gate.clear();  // a gate leads only to a trigger
  }

  grammar::GrammarMatcher matcher;
  std::vector<uint32_t> mask;  // matcher.mask_words() words: bit i = token i allowed
  std::string error;           // why the last fill failed ("" = it did not)
  std::string after;           // the trigger text still awaited; "" once active
  std::string window;          // inactive: the output's tail, which may hold the trigger's beginning
  std::string gate;            // the opening text still undecided; "" once decided

  bool active() const { return after.empty(); }
  bool gating() const { return !gate.empty(); }
  bool waiting() const { return gate.empty() && !after.empty(); }
  bool finished() const;
  // Gating: the sampled token, from the mask. False when the grammar refuses it.
  bool gate_step(int32_t token);
  // Inactive: takes the next output text; once it completes the trigger, the
  // constraint is active and the text after it (leading whitespace dropped)
  // is accepted. False when the grammar refuses that text.
  bool observe(std::string_view text);
};

// Fills the masks of `cs`, on `pool` (null: this thread) when there are several.
void fill_masks(std::span<SeqConstraint* const> cs, ThreadPool* pool);

// out = logits with the disallowed tokens at -inf; false if none is allowed.
bool mask_logits(const SeqConstraint& c, std::span<const float> logits, std::vector<float>& out);

}  // namespace pagoda
