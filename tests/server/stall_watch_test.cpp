// StallWatch's rule on hand-made snapshots: a step in progress is judged
// against its prediction; between steps, pending work is judged from the
// last step's end (the engine's clock), not from when a sample noticed it.
#include "server/stall_watch.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

EngineStats busy(int64_t steps, double last_step_end) {
  EngineStats s;
  s.steps = steps;
  s.running = 1;
  s.last_step_end = last_step_end;
  return s;
}

TEST(StallWatch, AStepIsJudgedAgainstItsPrediction) {
  StallWatch w(StallRule{.min_s = 0.3, .factor = 4, .unknown_s = 5});
  EngineStats s = busy(3, 10.0);
  s.step_in_progress = true;
  s.step_started_at = 10.0;
  s.step_predicted_s = 1.5;
  EXPECT_FALSE(w.check(s, 15.9).stalled);  // 4 x 1.5 = 6 s allowed
  const StallState st = w.check(s, 16.1);
  EXPECT_TRUE(st.stalled);
  EXPECT_NE(st.reason.find("steps like it take"), std::string::npos) << st.reason;
  s.step_predicted_s = 0;  // a size never seen: --stall-timeout
  EXPECT_FALSE(w.check(s, 14.9).stalled);
  EXPECT_TRUE(w.check(s, 15.1).stalled);
}

TEST(StallWatch, BetweenStepsPendingWorkCountsFromTheLastStepsEnd) {
  StallWatch w(StallRule{.min_s = 0.3, .factor = 4, .unknown_s = 5});
  w.sample(busy(1, 10.0), 0, 10.0);  // the sampler last saw step 1 at t = 10
  // Step 2 ran 1.5 s and just ended; the sampler has not seen it yet.
  EXPECT_FALSE(w.check(busy(2, 11.45), 11.5).stalled);
  // Nothing started since that end for longer than the floor: a stall.
  const StallState st = w.check(busy(2, 11.45), 11.8);
  EXPECT_TRUE(st.stalled);
  EXPECT_NE(st.reason.find("pending"), std::string::npos) << st.reason;
}

TEST(StallWatch, IdleIsNeverAStallAndEpisodesAreCounted) {
  StallWatch w(StallRule{.min_s = 0.3, .factor = 4, .unknown_s = 5});
  EngineStats idle;
  w.sample(idle, 0, 0.0);
  w.sample(idle, 0, 100.0);
  EXPECT_FALSE(w.check(idle, 100.0).stalled);
  w.sample(busy(0, 0.0), 1, 100.1);  // work arrives; no step starts
  w.sample(busy(0, 0.0), 1, 100.5);
  w.sample(busy(0, 0.0), 1, 100.6);  // the same episode
  EXPECT_EQ(w.stalls(), 1);
}

}  // namespace
}  // namespace pagoda::server
