#include "engine/faults.h"

#include <gtest/gtest.h>

#include <chrono>

#include "engine/fake_runner.h"
#include "engine/faulty_runner.h"
#include "util/error.h"

namespace pagoda {
namespace {

TEST(FaultSpec, ParsesTheDocumentedExample) {
  const auto f = FaultSpec::parse("forward=0.05,oom=0.02,seed=7");
  EXPECT_DOUBLE_EQ(f.forward, 0.05);
  EXPECT_DOUBLE_EQ(f.oom, 0.02);
  EXPECT_EQ(f.seed, 7u);
  EXPECT_TRUE(f.any());
  EXPECT_FALSE(FaultSpec::parse("").any());
  const auto g = FaultSpec::parse("alloc=1,slow=0.5,slow_ms=250,at_step=12");
  EXPECT_EQ(g.alloc, 1.0);
  EXPECT_EQ(g.slow_ms, 250);
  EXPECT_EQ(g.at_step, 12);
  EXPECT_EQ(FaultSpec::parse("lost_at_step=7").lost_at_step, 7);
  EXPECT_TRUE(FaultSpec::parse("lost_at_step=7").any());
  const auto gpu = FaultSpec::parse("gpu_trap_at_pass=200,gpu_hang_at_pass=5,gpu_oom_at_pass=9");
  EXPECT_EQ(gpu.gpu_trap_at_pass, 200);
  EXPECT_EQ(gpu.gpu_hang_at_pass, 5);
  EXPECT_EQ(gpu.gpu_oom_at_pass, 9);
  EXPECT_TRUE(gpu.any());
  EXPECT_NE(gpu.describe().find("gpu_trap_at_pass=200"), std::string::npos);
}

TEST(FaultInjector, LosesTheDeviceAtItsStep) {
  FaultInjector inj(FaultSpec{.lost_at_step = 3});
  EXPECT_NO_THROW(inj.before_forward(2));
  EXPECT_THROW(inj.before_forward(3), DeviceLost);
}

TEST(FaultSpec, RejectsBadItemsByName) {
  for (const char* bad : {"forward", "forward=2", "forward=-0.1", "forward=x", "oom=0.1x", "slow_ms=-5", "at_step=1.5",
                          "poison=1.5", "explode=1"}) {
    try {
      FaultSpec::parse(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--inject-faults"), std::string::npos) << e.what();
    }
  }
}

TEST(FaultInjector, DrawsAtTheGivenRatesAndCounts) {
  FaultInjector inj(FaultSpec{.forward = 0.25, .alloc = 0.5, .seed = 3});
  int forward = 0, alloc = 0;
  for (int i = 0; i < 4000; ++i) {
    try {
      inj.before_forward(i);
    } catch (const Error&) {
      ++forward;
    }
    alloc += inj.fail_alloc();
  }
  EXPECT_NEAR(forward / 4000.0, 0.25, 0.03);
  EXPECT_NEAR(alloc / 4000.0, 0.5, 0.03);
  EXPECT_EQ(inj.counts().forward, forward);
  EXPECT_EQ(inj.counts().alloc, alloc);
}

TEST(FaultInjector, AtStepAndOutOfMemoryThrowTheirKinds) {
  FaultInjector at(FaultSpec{.at_step = 4});
  EXPECT_NO_THROW(at.before_forward(3));
  EXPECT_THROW(at.before_forward(4), Error);
  FaultInjector oom(FaultSpec{.oom = 1.0});
  EXPECT_THROW(oom.before_forward(1), ResourceExhausted);
}

TEST(FaultInjector, PoisonIsDrawnOncePerRequestFromTheSeed) {
  const auto spec = FaultSpec::parse("poison=0.1,seed=9");
  EXPECT_DOUBLE_EQ(spec.poison, 0.1);
  EXPECT_TRUE(spec.any());
  FaultInjector a(spec), b(spec);
  int poisoned = 0;
  for (uint64_t id = 1; id <= 5000; ++id) {
    const bool p = a.poison(id);
    poisoned += p;
    EXPECT_EQ(p, a.is_poisoned(id));
    EXPECT_EQ(p, b.is_poisoned(id)) << "same seed, same verdict";
    if (id % 7 == 0) (void)b.fail_alloc();  // other draws do not move it
  }
  EXPECT_NEAR(poisoned / 5000.0, 0.1, 0.015);
  EXPECT_EQ(a.counts().poisoned, poisoned);
  EXPECT_EQ(b.counts().poisoned, 0);
  FaultInjector other(FaultSpec{.poison = 0.1, .seed = 10});
  int differ = 0;
  for (uint64_t id = 1; id <= 1000; ++id) differ += other.is_poisoned(id) != a.is_poisoned(id);
  EXPECT_GT(differ, 0);
  EXPECT_FALSE(FaultInjector{}.is_poisoned(1));
}

TEST(FaultInjector, APassCarryingAPoisonedRequestFailsAndSaysSo) {
  FaultInjector inj(FaultSpec{.poison = 0.5});
  EXPECT_NO_THROW(inj.before_forward(1, false));
  try {
    inj.before_forward(1, true);
    ADD_FAILURE() << "a poisoned batch passed";
  } catch (const ResourceExhausted&) {
    ADD_FAILURE() << "poison is not out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("poisoned request"), std::string::npos) << e.what();
  }
}

// The runner decorator: a pass fails exactly when its batch carries a
// poisoned request, and a slow step sleeps once however often it retries.
TEST(FaultyRunner, FailsPoisonedBatchesAndSleepsOncePerStep) {
  FaultInjector faults(FaultSpec{.slow = 1, .poison = 0.5, .slow_ms = 30, .seed = 5});
  uint64_t clean = 0, poisoned = 0;
  for (uint64_t id = 1; clean == 0 || poisoned == 0; ++id) (faults.is_poisoned(id) ? poisoned : clean) = id;
  auto inner = std::make_unique<testing::FakeRunner>(32, 4, 4, 16);
  testing::FakeRunner* fake = inner.get();
  FaultyRunner runner(std::move(inner), faults);
  const std::vector<int32_t> table = {0};
  auto pass = [&](int64_t step, uint64_t request) {
    Batch b;
    b.step = step;
    b.add(1, b.add_sequence(table, request), 0, true);
    std::vector<float> logits;
    runner.forward(b, logits);
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(pass(0, poisoned), Error);
  EXPECT_THROW(pass(0, poisoned), Error);  // a retry of the same step: no second sleep
  EXPECT_NO_THROW(pass(0, clean));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.03);                  // it slept
  EXPECT_EQ(faults.counts().slow, 1);  // once, not three times
  EXPECT_EQ(fake->calls, 1);           // the poisoned passes never reached the model
}

}  // namespace
}  // namespace pagoda
