// Every mask-table key a grammar's matcher can meet, found from the grammar
// alone, so the tables can be built before the first token instead of by
// the first token that reaches each state (mask.h describes keys).
//
// Contract:
//   - A key is [complete flag, frames...]: the top `frames` positions of a
//     stack, bottom first (fewer, flagged complete, for a shallower stack).
//   - context_keys() returns a superset of the keys of every stack the
//     StackEngine can build for the grammar: a top is any byte-set position;
//     below a position of rule T lies any return position of a non-tail call
//     of a rule that reaches T through tail calls; a stack may end (complete)
//     at a position of a rule the root reaches through tail calls.
//   - At most max_keys keys, and bounded work (max_keys * 64 steps); the
//     list is then cut short (the rest are built lazily, as before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace pagoda::grammar {

std::vector<std::vector<uint32_t>> context_keys(const Grammar& g, size_t frames, size_t max_keys);

}  // namespace pagoda::grammar
