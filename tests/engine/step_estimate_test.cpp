#include "engine/step_estimate.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(StepEstimate, NoStepsNoPrediction) {
  StepEstimate e;
  EXPECT_FALSE(e.predict(1).has_value());
  EXPECT_FALSE(e.predict(4096).has_value());
}

TEST(StepEstimate, PredictsFromItsOwnGroupScaledUpByTokens) {
  StepEstimate e;
  for (int i = 0; i < 5; ++i) e.observe(16, 0.1);
  EXPECT_DOUBLE_EQ(*e.predict(16), 0.1);
  EXPECT_DOUBLE_EQ(*e.predict(24), 0.1 * 24 / 16);  // same group (16..31), more tokens
  EXPECT_DOUBLE_EQ(*e.predict(17), 0.1 * 17 / 16);
}

TEST(StepEstimate, UnseenSizesOverestimate) {
  StepEstimate e;
  e.observe(1, 0.01);
  // Larger: the nearest smaller group scaled by the token ratio.
  EXPECT_DOUBLE_EQ(*e.predict(2048), 0.01 * 2048);
  e.observe(1024, 2.0);
  EXPECT_DOUBLE_EQ(*e.predict(2048), 2.0 * 2);
  // Smaller than any seen but the ones in between: the nearest larger group's time.
  StepEstimate f;
  f.observe(1024, 2.0);
  EXPECT_DOUBLE_EQ(*f.predict(8), 2.0);
}

TEST(StepEstimate, DecaysTowardNewTimesAndClampsOutliers) {
  StepEstimate e;
  e.observe(4, 1.0);
  e.observe(4, 2.0);
  EXPECT_DOUBLE_EQ(*e.predict(4), 1.0 + 0.2 * (2.0 - 1.0));
  // A 100 s stall counts as four times the mean.
  StepEstimate f;
  f.observe(4, 1.0);
  f.observe(4, 100.0);
  EXPECT_DOUBLE_EQ(*f.predict(4), 1.0 + 0.2 * (4.0 - 1.0));
  // Nonsense is ignored.
  f.observe(0, 5.0);
  f.observe(4, -1.0);
  EXPECT_DOUBLE_EQ(*f.predict(4), 1.0 + 0.2 * (4.0 - 1.0));
}

}  // namespace
}  // namespace pagoda
