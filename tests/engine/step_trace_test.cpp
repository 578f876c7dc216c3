// The step trace (engine/step_trace.h): its phases partition the engine
// thread's time, a nested section gives the time back to its caller's phase,
// and EngineCore counts the steps that ran and the tokens they generated.
#include "engine/step_trace.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "engine/engine_core.h"
#include "engine/fake_runner.h"

namespace pagoda {
namespace {

using namespace std::chrono_literals;

double elapsed_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StepTrace, PhasesPartitionTheTimeAndNestedSectionsGiveItBack) {
  const auto t0 = std::chrono::steady_clock::now();
  PhaseClock clock;  // starts in wait
  EXPECT_EQ(clock.enter(StepPhase::sample), StepPhase::wait);
  std::this_thread::sleep_for(2ms);
  const StepPhase outer = clock.enter(StepPhase::handoff);
  EXPECT_EQ(outer, StepPhase::sample);
  std::this_thread::sleep_for(1ms);
  EXPECT_EQ(clock.enter(outer), StepPhase::handoff);
  std::this_thread::sleep_for(1ms);
  clock.enter(StepPhase::wait);
  const double wall = elapsed_s(t0);
  const StepPhaseTimes& t = clock.times();
  EXPECT_GE(t[StepPhase::sample], 0.003);  // before and after the nested handoff
  EXPECT_GE(t[StepPhase::handoff], 0.001);
  EXPECT_LE(t.total(), wall);  // every phase's time is the clock's own, none counted twice
  EXPECT_EQ(t[StepPhase::forward], 0.0);

  StepPhaseTimes later = t;
  later[StepPhase::forward] += 0.5;
  later.steps += 10;
  later.tokens += 10;
  const StepPhaseTimes d = later.since(t);
  EXPECT_EQ(d.steps, 10);
  EXPECT_DOUBLE_EQ(d[StepPhase::forward], 0.5);
  EXPECT_DOUBLE_EQ(d[StepPhase::sample], 0.0);
  EXPECT_NE(d.table().find("forward      50000.0"), std::string::npos) << d.table();  // 0.5 s over 10 steps
}

TEST(StepTrace, TheEngineCountsStepsThatRanAndTheirTokens) {
  spdlog::set_level(spdlog::level::err);
  EngineConfig cfg;
  cfg.block_size = 4;
  cfg.audit_every_step = true;
  cfg.log_interval_s = 0;
  auto runner = std::make_unique<testing::FakeRunner>(50, 16, 4, 1024, std::vector<int32_t>{0}, 0);
  EngineCore core(cfg, std::move(runner), 16, nullptr, std::make_shared<ManualClock>(), std::vector<TokenId>{});
  Request r;
  r.prompt = {3, 4, 5};
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 5;
  r.sampling.ignore_eos = true;
  core.validate(r);
  int delivered = 0;
  core.add(1, std::move(r), [&](RequestOutput&& o) {
    delivered += int(o.tokens.size());
    return true;
  });
  int ran = 0;
  for (int i = 0; i < 100 && core.num_requests() > 0; ++i) ran += core.step();
  EXPECT_FALSE(core.step());  // nothing to run: not a step of the trace
  const StepPhaseTimes& t = core.stats().phases;
  EXPECT_EQ(delivered, 5);
  EXPECT_EQ(t.steps, ran);
  EXPECT_EQ(t.tokens, 5);
  EXPECT_GT(t[StepPhase::forward], 0.0);
  EXPECT_GT(t[StepPhase::handoff], 0.0);
}

}  // namespace
}  // namespace pagoda
