// Time-budgeted steps end to end (scheduler rule 5): a real server on
// stories260K whose every forward pass is slowed past the step target learns
// that its steps are slow, and /metrics shows the step budget shrink from the
// full token budget to the running decodes plus one minimal prefill chunk.
#include <gtest/gtest.h>

#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using namespace std::chrono_literals;

TEST(ServerStepBudget, ASlowedForwardShrinksTheBudgetGauge) {
  // Every step sleeps 60 ms; the target is 40 ms.
  ServerProcess s({"--max-step-ms", "40", "--max-batched-tokens", "512", "--inject-faults", "slow=1,slow_ms=60"});
  auto stream = std::async(std::launch::async, [&] {
    return http_post(s.port(), "/v1/completions",
                     {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"ignore_eos", true}})
        .status;
  });
  double largest = 0, smallest = 1e9, predicted = 0, target = 0;
  while (stream.wait_for(20ms) != std::future_status::ready) {
    const PromMetrics m = metrics(s.port());
    const double budget = m.at("pagoda_engine_step_budget_tokens");
    if (budget == 0) continue;  // no step ran yet
    largest = std::max(largest, budget);
    smallest = std::min(smallest, budget);
    predicted = std::max(predicted, m.at("pagoda_engine_step_cost_predicted_seconds"));
    target = std::max(target, m.at("pagoda_engine_step_target_seconds"));
  }
  EXPECT_EQ(stream.get(), 200);
  // Before the cost model learned anything: the whole token budget.
  EXPECT_EQ(largest, 512);
  // Once it knows a step takes > 40 ms: one decode and one minimal chunk.
  EXPECT_LE(smallest, 1 + 16);
  EXPECT_GT(predicted, 0.05);
  EXPECT_DOUBLE_EQ(target, 0.040);
  const PromMetrics m = metrics(s.port());
  EXPECT_GE(m.at("pagoda_engine_step_duration_seconds_count"), 30);  // ~40 steps
  // Every step took at least the injected 60 ms: none in the buckets below 50 ms.
  EXPECT_EQ(m.at("pagoda_engine_step_duration_seconds_bucket{le=\"0.05\"}"), 0);
  // So every time-capped step ran past its 40 ms target: none at or under 1x.
  EXPECT_GT(m.at("pagoda_engine_step_time_over_target_count"), 0);
  EXPECT_EQ(m.at("pagoda_engine_step_time_over_target_bucket{le=\"1\"}"), 0);
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
