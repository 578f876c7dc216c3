// StackEngine's closure work: chains of nullable rules close in linear work
// (identical work items expand once), and a step limit turns a grammar too
// costly to match into InvalidArgument instead of a stall.
#include <gtest/gtest.h>

#include "grammar/frontends.h"
#include "grammar/stack_set.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

// Steps to take one 'a' from the start of (a*){n}b: every copy of a* may be
// the one that read it, and every later copy may be skipped.
size_t steps_for_one_byte(const Grammar& g) {
  StackEngine e(g);
  StackSet s, next;
  e.initial(s);
  e.limit_steps(SIZE_MAX);
  EXPECT_TRUE(e.advance(s, 'a', next));
  return e.steps();
}

TEST(StackEngine, NullableChainsCloseInLinearWork) {
  const Grammar g100 = compile_regex("(a*){100}b"), g400 = compile_regex("(a*){400}b");
  const size_t s100 = steps_for_one_byte(g100), s400 = steps_for_one_byte(g400);
  // Linear: ~4x (the sort's log factor adds a little); quadratic would be 16x.
  EXPECT_LT(s400, 6 * s100) << s100 << " steps for 100 copies, " << s400 << " for 400";

  // The closed set is still exact: any copy may read more, and b ends it.
  StackEngine e(g400);
  StackSet s, a, b;
  e.initial(s);
  ASSERT_TRUE(e.accepts(s, {reinterpret_cast<const uint8_t*>("aaab"), 4}, a, b));
  ASSERT_TRUE(e.advance(s, 'a', a));
  ASSERT_TRUE(e.advance(a, 'b', b));
  EXPECT_TRUE(b.has_finished());
  EXPECT_FALSE(e.advance(b, 'a', a));
}

TEST(StackEngine, WorkPastTheLimitThrowsAndTheLimitResets) {
  const Grammar g = compile_regex("(a*){200}b");
  StackEngine e(g);
  StackSet s, next;
  e.initial(s);
  e.limit_steps(50);
  try {
    e.advance(s, 'a', next);
    FAIL() << "50 steps cannot close 200 copies";
  } catch (const InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find("too costly"), std::string::npos) << err.what();
  }
  e.limit_steps();  // the default bound: this grammar is cheap enough
  EXPECT_TRUE(e.advance(s, 'a', next));
  EXPECT_LT(e.steps(), StackEngine::kMaxSteps);
}

}  // namespace
}  // namespace pagoda::grammar
