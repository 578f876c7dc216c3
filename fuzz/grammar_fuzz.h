// What the three grammar fuzz targets share: any input (up to 4 KiB, with
// tight limits) either compiles or throws InvalidArgument, never crashes or
// hangs; a compiled grammar then runs a short random walk whose bytes it must
// accept, and a state with no way on must be able to end. Each target gives
// only its front end. The whole walk's matching work is bounded as one
// mask's is (StackEngine::limit_steps), so no input can hang it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "fuzz_shared.h"
#include "grammar/frontends.h"
#include "grammar/stack_set.h"
#include "util/error.h"

namespace pagoda::fuzz {

template <class Compile>
int fuzz_grammar_front_end(const uint8_t* data, size_t size, Compile compile) {
  namespace g = pagoda::grammar;
  if (size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  g::GrammarLimits limits;
  limits.max_repeat = 200;
  limits.max_elements = 200000;
  limits.max_rules = 20000;
  g::Grammar grammar;
  try {
    grammar = compile(text, limits);
  } catch (const pagoda::InvalidArgument&) {
    return 0;
  }
  // A walk of up to 64 bytes, each the first or a pseudo-random allowed byte.
  g::StackEngine e(grammar);
  e.limit_steps();
  g::StackSet cur, next;
  try {
    e.initial(cur);
    check(!cur.empty(), "a compiled grammar has a start state");
    Splitter split{uint32_t(size)};
    for (int step = 0; step < 64; ++step) {
      // The bytes allowed next: the union of the stacks' tops (every stack is closed).
      g::ByteSet tops;
      for (size_t i = 0; i < cur.size(); ++i)
        if (const auto s = cur.stack(i); !s.empty())
          for (int w = 0; w < 4; ++w) tops.w[w] |= grammar.sets[grammar.elems[s.back()].id].w[w];
      int allowed[256], n = 0;
      for (int b = 0; b < 256; ++b)
        if (tops.test(uint8_t(b))) allowed[n++] = b;
      if (n == 0) {
        check(cur.has_finished(), "a state with no way on can end");
        break;
      }
      if (!e.advance(cur, uint8_t(allowed[split.next(size_t(n)) - 1]), next)) break;  // past kMaxDepth only
      std::swap(cur, next);
    }
  } catch (const pagoda::InvalidArgument&) {
    // "grammar too ambiguous": a clear error, allowed.
  }
  return 0;
}

}  // namespace pagoda::fuzz
