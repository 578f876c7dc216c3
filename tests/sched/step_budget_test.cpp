// Time-budgeted steps (scheduler rules 5 and 6) with a fake cost model, and
// the learned cost model on its own.
#include <gtest/gtest.h>

#include <random>

#include "sched/scheduler_fixture.h"
#include "sched/step_cost.h"
#include "util/error.h"

namespace pagoda {
namespace {

// A cost model whose coefficients the test sets (a fake clock's forward pass).
struct FakeCost : StepCostModel {
  StepCoefficients c;
  bool known = true;
  std::optional<double> predict(const StepShape& s) const override {
    return known ? std::optional<double>(c.predict(s)) : std::nullopt;
  }
};

SchedulerConfig budget_config(double max_step_ms) {
  return SchedulerConfig{.max_num_seqs = 32, .max_batched_tokens = 512, .max_step_ms = max_step_ms};
}

// Runs steps until every sequence added so far decodes.
void prefill_all(Fixture& f, const StepCostModel* cost, int64_t& step) {
  for (int i = 0; i < 1000; ++i) {
    bool all = true;
    for (const auto& s : f.seqs) all = all && s->state == SeqState::decode;
    if (all) return;
    f.complete(f.sched.schedule(++step, cost));
  }
  FAIL() << "prefill did not finish";
}

TEST(StepBudget, DecodeCarryingStepStaysWithinTheTarget) {
  FakeCost cost;
  cost.c = {.fixed = 0.010, .per_token = 0.001, .per_context = 1e-6};
  Fixture f(2048, budget_config(50));
  int64_t step = 0;
  for (int i = 0; i < 4; ++i) f.add(8);
  prefill_all(f, &cost, step);
  Sequence* big = f.add(3000, 0, 4000);
  StepPlan p = f.sched.schedule(++step, &cost);
  EXPECT_DOUBLE_EQ(p.target_s, 0.050);
  ASSERT_GT(tokens_of(p, big), 0);
  EXPECT_LE(p.predicted_s, p.target_s);
  EXPECT_NEAR(p.predicted_s, p.target_s, 0.0011);  // the chunk fills the time: one more token would not fit
  EXPECT_EQ(p.num_tokens, p.budget_tokens);
  EXPECT_LT(p.num_tokens, 100);  // far below the 512-token budget
}

TEST(StepBudget, RandomStatesNeverPlanBeyondTheTargetAndOneMinimalChunk) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    FakeCost cost;
    cost.c = {.fixed = 0.001 * (rng() % 20), .per_token = 1e-4 * (1 + rng() % 50), .per_context = 1e-7 * (rng() % 50)};
    const double target_ms = 5 + rng() % 80;
    Fixture f(4096, budget_config(target_ms));
    int64_t step = 0;
    for (int i = int(1 + rng() % 12); i > 0; --i) f.add(int32_t(1 + rng() % 40), 0, 4000);
    prefill_all(f, &cost, step);
    for (int i = int(rng() % 4); i >= 0; --i) f.add(int32_t(1 + rng() % 1500), int32_t(rng() % 2), 4000);
    for (int s = 0; s < 20; ++s) {
      StepPlan p = f.sched.schedule(++step, &cost);
      StepShape decodes, first_chunk;
      bool first = true;
      for (const auto& sc : p.scheduled) {
        if (sc.num_tokens == 1 && sc.seq->num_tokens() - sc.seq->num_computed == 1) {
          decodes.add_chunk(sc.seq->num_computed, 1);
        } else if (first) {
          first = false;
          first_chunk.add_chunk(sc.seq->num_computed, std::min(sc.num_tokens, 16));
        }
      }
      if (decodes.tokens > 0) {
        ASSERT_GT(p.target_s, 0);
        // The decodes all run, even beyond the target; prefill fills the rest.
        const double bound = std::max(p.target_s, *cost.predict(decodes));
        const double slack = cost.c.per_token * first_chunk.tokens + cost.c.per_context * first_chunk.context;
        ASSERT_LE(p.predicted_s, bound + slack + 1e-12) << "trial " << trial << " step " << s;
      }
      f.complete(p);
    }
  }
}

TEST(StepBudget, IdleEngineWithOneLongPromptPrefillsAtTheFullBudget) {
  FakeCost cost;
  cost.c = {.fixed = 0.010, .per_token = 0.001};
  Fixture f(2048, budget_config(20));
  Sequence* s = f.add(3000, 0, 4000);
  StepPlan p = f.sched.schedule(1, &cost);
  EXPECT_EQ(tokens_of(p, s), 512);  // far beyond the 20 ms target: nothing else waits for it
  EXPECT_EQ(p.target_s, 0);
}

TEST(StepBudget, LongPrefillThresholdChunksEvenAnIdleEngine) {
  SchedulerConfig cfg = budget_config(0);
  cfg.long_prefill_token_threshold = 100;
  Fixture f(2048, cfg);
  Sequence* a = f.add(300, 0, 4000);
  Sequence* b = f.add(50, 0, 4000);
  StepPlan p = f.sched.schedule(1);
  EXPECT_EQ(tokens_of(p, a), 100);
  EXPECT_EQ(tokens_of(p, b), 50);  // a short prompt is not capped
}

TEST(StepBudget, ZeroKeepsThePureTokenBudget) {
  FakeCost cost;
  cost.c = {.fixed = 1.0, .per_token = 1.0};  // every step "takes" seconds
  Fixture f(2048, budget_config(0));
  int64_t step = 0;
  for (int i = 0; i < 4; ++i) f.add(8);
  prefill_all(f, &cost, step);
  f.add(3000, 0, 4000);
  StepPlan p = f.sched.schedule(++step, &cost);
  EXPECT_EQ(p.num_tokens, 512);
  EXPECT_EQ(p.target_s, 0);
}

TEST(StepBudget, NoPredictionYetRampsUpToTheTokenBudget) {
  FakeCost cost;
  cost.known = false;
  SchedulerConfig cfg = budget_config(SchedulerConfig::kAutoStepMs);
  cfg.cold_start_tokens = 64;
  Fixture f(2048, cfg);
  int64_t step = 0;
  f.add(3000, 0, 4000);
  // Cold steps grow 64, 128, 256, then the full 512-token budget.
  for (int32_t want : {64, 128, 256, 512, 512}) {
    const StepPlan p = f.sched.schedule(++step, &cost);
    EXPECT_EQ(p.num_tokens, want);
    f.complete(p);
  }
  cost.known = true;  // once the model predicts, rule 5 sizes the steps
  cost.c = {.fixed = 0.001, .per_token = 1e-5};
  EXPECT_EQ(f.sched.schedule(++step, &cost).num_tokens, 512);  // an idle engine: the full budget
}

TEST(StepBudget, ZeroHasNoColdStartRamp) {
  FakeCost cost;
  cost.known = false;
  Fixture f(2048, budget_config(0));
  int64_t step = 0;
  f.add(3000, 0, 4000);
  EXPECT_EQ(f.sched.schedule(++step, &cost).num_tokens, 512);
}

TEST(StepBudget, AutoTargetIsAMultipleOfTheDecodeStepWithAFloor) {
  FakeCost cost;
  cost.c = {.fixed = 0.020, .per_token = 0.001};
  Fixture f(2048, budget_config(SchedulerConfig::kAutoStepMs));
  int64_t step = 0;
  for (int i = 0; i < 10; ++i) f.add(8);
  prefill_all(f, &cost, step);
  f.add(3000, 0, 4000);
  StepPlan p = f.sched.schedule(++step, &cost);
  const double decode_s = 0.020 + 11 * 0.001;  // the 10 decodes and the prompt's first decode
  EXPECT_DOUBLE_EQ(p.target_s, SchedulerConfig{}.auto_step_multiple * decode_s);
  EXPECT_LE(p.predicted_s, p.target_s);
  cost.c = {.fixed = 0.0001, .per_token = 0.00001};  // a tiny model: the floor
  p = f.sched.schedule(++step, &cost);
  EXPECT_DOUBLE_EQ(p.target_s, SchedulerConfig{}.auto_step_floor_ms / 1000);
}

// Under a burst the yardstick is the batch being served (running and waiting,
// up to max_num_seqs), so the prompts are not chunked by what the first few
// streams' decodes cost.
TEST(StepBudget, AutoTargetIsSizedByTheWholeBatchBeingServed) {
  FakeCost cost;
  cost.c = {.fixed = 0.020, .per_token = 0.001};
  Fixture f(8192, budget_config(SchedulerConfig::kAutoStepMs));
  int64_t step = 0;
  for (int i = 0; i < 2; ++i) f.add(8);
  prefill_all(f, &cost, step);
  const double multiple = SchedulerConfig{}.auto_step_multiple;
  for (int i = 0; i < 20; ++i) f.add(100, 0, 200);
  StepPlan p = f.sched.schedule(++step, &cost);
  EXPECT_DOUBLE_EQ(p.target_s, multiple * (0.020 + 22 * 0.001));
  EXPECT_GT(p.num_tokens, 2 + 2 * SchedulerConfig{}.min_prefill_chunk);  // more than a minimal chunk
  f.complete(p);
  for (int i = 0; i < 40; ++i) f.add(100, 0, 200);  // more than max_num_seqs (32) in all
  p = f.sched.schedule(++step, &cost);
  EXPECT_DOUBLE_EQ(p.target_s, multiple * (0.020 + 32 * 0.001));
}

TEST(StepBudget, MaxStepMsSpellings) {
  SchedulerConfig c;
  parse_max_step_ms("2.5x", c);
  EXPECT_EQ(c.max_step_ms, SchedulerConfig::kAutoStepMs);
  EXPECT_DOUBLE_EQ(c.auto_step_multiple, 2.5);
  parse_max_step_ms("40", c);
  EXPECT_DOUBLE_EQ(c.max_step_ms, 40);
  parse_max_step_ms("auto", c);
  EXPECT_EQ(c.max_step_ms, SchedulerConfig::kAutoStepMs);
  EXPECT_DOUBLE_EQ(c.auto_step_multiple, SchedulerConfig{}.auto_step_multiple);
  EXPECT_THROW(parse_max_step_ms("0x", c), InvalidArgument);
}

TEST(StepBudget, DecodesBeyondTheTargetStillLetAMinimalChunkThrough) {
  FakeCost cost;
  cost.c = {.fixed = 0.010, .per_token = 0.010};
  Fixture f(2048, budget_config(20));  // 8 decodes alone take 90 ms
  int64_t step = 0;
  for (int i = 0; i < 8; ++i) f.add(4);
  prefill_all(f, &cost, step);
  Sequence* s = f.add(500, 0, 4000);
  StepPlan p = f.sched.schedule(++step, &cost);
  EXPECT_EQ(tokens_of(p, s), SchedulerConfig{}.min_prefill_chunk);
  EXPECT_EQ(p.num_tokens, 8 + SchedulerConfig{}.min_prefill_chunk);
}

TEST(StepBudget, BudgetShrinksAsTheCostGrows) {
  FakeCost cost;
  Fixture f(2048, budget_config(100));
  int64_t step = 0;
  for (int i = 0; i < 4; ++i) f.add(8);
  prefill_all(f, &cost, step);
  int32_t last = 1 << 30;
  for (double per_token : {0.0001, 0.0005, 0.002, 0.01}) {
    cost.c = {.fixed = 0.005, .per_token = per_token};
    const StepPlan p = f.sched.schedule(++step, &cost);
    EXPECT_LT(p.budget_tokens, last) << per_token;
    last = p.budget_tokens;
  }
}

// Rule 6: one long prompt, admitted first, does not hold back short ones.
TEST(StepBudget, ShortPromptsAreNotStarvedByALongOne) {
  FakeCost cost;
  cost.c = {.fixed = 0.005, .per_token = 0.001};
  Fixture f(4096, budget_config(60));
  int64_t step = 0;
  f.add(8);
  prefill_all(f, &cost, step);  // one decode: the step is time-capped
  Sequence* big = f.add(2000, 0, 4000);
  f.complete(f.sched.schedule(++step, &cost));  // the long prompt is admitted and starts
  ASSERT_TRUE(big->is_running());
  std::vector<Sequence*> shorts;
  for (int i = 0; i < 4; ++i) shorts.push_back(f.add(20, 0, 4000));
  for (int i = 0; i < 4; ++i) f.complete(f.sched.schedule(++step, &cost));
  for (Sequence* s : shorts) EXPECT_EQ(s->state, SeqState::decode) << "short prompt " << s->id << " starved";
  EXPECT_EQ(big->state, SeqState::prefill);

  // The same with the old order: the long prompt takes every step's budget.
  Fixture g(4096, budget_config(0));
  step = 0;
  g.add(8);
  prefill_all(g, &cost, step);
  Sequence* big0 = g.add(2000, 0, 4000);
  g.complete(g.sched.schedule(++step, &cost));
  std::vector<Sequence*> shorts0;
  for (int i = 0; i < 4; ++i) shorts0.push_back(g.add(20, 0, 4000));
  g.complete(g.sched.schedule(++step, &cost));
  EXPECT_EQ(shorts0[0]->state, SeqState::waiting);
  EXPECT_TRUE(big0->is_running());
}

// Rule 6 under overload: prompts that cannot finish in one step, arriving
// one a step. New arrivals get no chunk before the running prefills, so the
// prompts finish in arrival order instead of each arrival taking the step's
// tokens from the one before (every prompt half done, none finishing).
TEST(StepBudget, ArrivalsDoNotTakeTheTokensOfRunningPrefills) {
  FakeCost cost;
  cost.c = {.fixed = 0.005, .per_token = 0.001};
  Fixture f(4096, budget_config(60));  // ~54 prefill tokens a step beside one decode
  int64_t step = 0;
  f.add(8, 0, 100000);
  prefill_all(f, &cost, step);
  std::vector<Sequence*> prompts;
  std::vector<int64_t> done_at;
  for (int i = 0; i < 40 && done_at.size() < 6; ++i) {
    if (prompts.size() < 6) prompts.push_back(f.add(100, 0, 4000));
    f.complete(f.sched.schedule(++step, &cost));
    for (size_t k = done_at.size(); k < prompts.size() && prompts[k]->state == SeqState::decode; ++k)
      done_at.push_back(step);
    for (size_t k = done_at.size() + 1; k < prompts.size(); ++k)
      ASSERT_NE(prompts[k]->state, SeqState::decode) << "prompt " << k << " finished before prompt " << done_at.size();
  }
  ASSERT_EQ(done_at.size(), 6u);
  EXPECT_LE(done_at[0], 3);  // the first is not slowed by the ones behind it
}

// Rule 6's aging: a stream of short prompts cannot starve the long one.
TEST(StepBudget, ALongPromptStillProgressesUnderAStreamOfShortOnes) {
  FakeCost cost;
  cost.c = {.fixed = 0.005, .per_token = 0.001};
  SchedulerConfig cfg = budget_config(40);
  cfg.max_bypass = 3;
  Fixture f(1 << 14, cfg);
  int64_t step = 0;
  f.add(8, 0, 100000);
  prefill_all(f, &cost, step);
  Sequence* big = f.add(600, 0, 4000);
  int32_t last = 0, stuck = 0;
  for (int i = 0; i < 400 && big->state != SeqState::decode; ++i) {
    f.add(30, 0, 32);  // a new short prompt every step, each finishing soon after
    const StepPlan p = f.sched.schedule(++step, &cost);
    f.complete(p);
    for (const auto& s : f.seqs)
      if (s->is_running() && s->num_tokens() >= s->max_len) f.sched.remove(s.get()), s->state = SeqState::finished;
    stuck = big->num_computed == last ? stuck + 1 : 0;
    ASSERT_LE(stuck, cfg.max_bypass + 1) << "the long prompt starved at step " << step;
    last = big->num_computed;
  }
  EXPECT_EQ(big->state, SeqState::decode);
}

TEST(LearnedStepCost, NoPredictionBeforeWarmup) {
  LearnedStepCost c;
  StepShape s{.tokens = 10, .context = 100};
  EXPECT_FALSE(c.predict(s));
  for (int i = 0; i < LearnedStepCost::kWarmup; ++i) c.observe(s, 0.01);
  ASSERT_TRUE(c.predict(s));
  EXPECT_NEAR(*c.predict(s), 0.01, 1e-4);
}

StepShape random_shape(std::mt19937& rng) {
  StepShape s;
  const int decodes = int(rng() % 32);
  for (int i = 0; i < decodes; ++i) s.add_chunk(int64_t(rng() % 500), 1);
  if (rng() % 2 || decodes == 0) s.add_chunk(int64_t(rng() % 200), int64_t(1 + rng() % 300));
  return s;
}

TEST(LearnedStepCost, LearnsTheCoefficientsAndFollowsAChange) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.02);
  LearnedStepCost c;
  StepCoefficients truth{.fixed = 0.004, .per_token = 2e-4, .per_context = 5e-8};
  auto run = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      const StepShape s = random_shape(rng);
      c.observe(s, truth.predict(s) * (1 + noise(rng)));
    }
  };
  auto worst_error = [&] {
    double worst = 0;
    for (int i = 0; i < 100; ++i) {
      const StepShape s = random_shape(rng);
      worst = std::max(worst, std::abs(*c.predict(s) / truth.predict(s) - 1));
    }
    return worst;
  };
  run(200);
  EXPECT_LT(worst_error(), 0.1);
  truth = {.fixed = 0.012, .per_token = 9e-4, .per_context = 1e-7};  // the machine got 3-4x slower
  run(100);
  EXPECT_LT(worst_error(), 0.1);
  truth = {.fixed = 0.001, .per_token = 1e-4, .per_context = 0};  // and much faster
  run(150);                                                       // old, slower steps fade at kDecay a step
  EXPECT_LT(worst_error(), 0.1);
  EXPECT_GE(c.coefficients().per_context, 0);
}

TEST(LearnedStepCost, AnOutlierMovesThePredictionLittle) {
  LearnedStepCost c;
  const StepShape s{.tokens = 16, .context = 2000};
  for (int i = 0; i < 50; ++i) c.observe(s, 0.010);
  c.observe(s, 5.0);  // one stalled step
  EXPECT_LT(*c.predict(s), 0.010 * 1.5);
}

TEST(LearnedStepCost, SameSizedStepsStillPredictLargerOnesAsCostlier) {
  LearnedStepCost c;
  for (int i = 0; i < 50; ++i) c.observe(StepShape{.tokens = 8, .context = 800}, 0.008);
  const double big = *c.predict(StepShape{.tokens = 256, .context = 40000});
  EXPECT_GT(big, 0.05);  // part of the cost is per token: a big chunk is not free
  for (double v : {c.coefficients().fixed, c.coefficients().per_token, c.coefficients().per_context}) EXPECT_GE(v, 0);
}

// Rule 8: a whole input (an encoder's) gets all its tokens in one step or
// none; a shorter one behind it may pass it, and it goes whole next step.
TEST(StepBudget, WholeInputsAreNeverChunked) {
  Fixture f(64, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 32, .max_step_ms = 0});
  Sequence* a = f.add(30);
  Sequence* b = f.add(10);
  Sequence* c = f.add(2);
  for (Sequence* s : {a, b, c}) s->whole = s->skip_prefix_cache = true;
  StepPlan p = f.sched.schedule(1);
  EXPECT_EQ(tokens_of(p, a), 30);
  EXPECT_EQ(tokens_of(p, b), 0);  // 2 tokens left: not a chunk of it
  EXPECT_EQ(tokens_of(p, c), 2);
  f.complete(p);
  p = f.sched.schedule(2);
  EXPECT_EQ(tokens_of(p, b), 10);
}

// Neither a time target nor the cold start's cap splits a whole input:
// alone in a step it runs whole (the engine bounds it by max_batched_tokens).
TEST(StepBudget, WholeInputsIgnoreTheColdStartCapAndTimeTargets) {
  FakeCost cost;
  cost.known = false;
  SchedulerConfig cfg = budget_config(SchedulerConfig::kAutoStepMs);
  cfg.cold_start_tokens = 16;
  Fixture f(2048, cfg);
  Sequence* a = f.add(400, 0, 400);
  Sequence* b = f.add(100, 0, 100);
  a->whole = b->whole = true;
  StepPlan p = f.sched.schedule(1, &cost);
  EXPECT_EQ(tokens_of(p, a), 400);  // the cold cap of 16 does not chunk it
  EXPECT_EQ(tokens_of(p, b), 0);    // nor does a second whole input squeeze past the cap
  f.complete(p);
  cost.known = true;
  cost.c = {.fixed = 0.001, .per_token = 1.0};  // a second a token: any time target is long passed
  p = f.sched.schedule(2, &cost);
  EXPECT_EQ(tokens_of(p, b), 100);
}

}  // namespace
}  // namespace pagoda
