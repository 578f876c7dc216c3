// Scheduler rule 7: state slots (a hybrid model). Admission needs a free
// slot as well as blocks; running sequences never need another, so a tight
// slot pool queues new work and never preempts; a preempted sequence gives
// its slot back and resumes from zeros in a fresh one.
#include <gtest/gtest.h>

#include "scheduler_fixture.h"

namespace pagoda {
namespace {

SchedulerConfig no_time_budget() {
  SchedulerConfig cfg;
  cfg.max_step_ms = 0;
  return cfg;
}

TEST(SchedulerStateSlots, AdmitsOnlyWhileASlotIsFree) {
  Fixture f(64, no_time_budget(), 4, /*state_slots=*/2);
  Sequence* a = f.add(5);
  Sequence* b = f.add(5);
  Sequence* c = f.add(5);
  StepPlan p = f.sched.schedule(1);
  EXPECT_EQ(p.scheduled.size(), 2u);  // blocks for all three, slots for two
  EXPECT_TRUE(a->is_running());
  EXPECT_TRUE(b->is_running());
  EXPECT_EQ(c->state, SeqState::waiting);
  EXPECT_TRUE(p.preempted.empty());
  f.complete(p);
  // Running sequences decode without new slots; c keeps waiting, nobody is preempted.
  for (int step = 2; step < 6; ++step) {
    p = f.sched.schedule(step);
    EXPECT_EQ(p.scheduled.size(), 2u);
    EXPECT_TRUE(p.preempted.empty());
    EXPECT_EQ(c->state, SeqState::waiting);
    f.complete(p);
  }
  // a ends: its slot goes to c.
  f.sched.remove(a);
  p = f.sched.schedule(6);
  EXPECT_TRUE(c->is_running());
  EXPECT_EQ(f.bm.state_io(c->id).in, kNoState);
  EXPECT_EQ(f.bm.num_free_slots(), 0);
  EXPECT_FALSE(f.bm.audit().has_value());
}

TEST(SchedulerStateSlots, PreemptionGivesTheSlotBackAndResumesFromZeros) {
  SchedulerConfig cfg = no_time_budget();
  cfg.kv_watermark = 0;
  cfg.kv_headroom_per_seq = 0;
  Fixture f(4, cfg, 4, /*state_slots=*/2);  // 16 tokens: two growing sequences collide
  Sequence* a = f.add(6);
  Sequence* b = f.add(6);
  bool preempted = false;
  for (int step = 1; step < 40 && !preempted; ++step) {
    StepPlan p = f.sched.schedule(step);
    for (Sequence* v : p.preempted) {
      preempted = true;
      EXPECT_FALSE(f.bm.contains(v->id));
      EXPECT_EQ(v->num_computed, 0);
    }
    f.complete(p);
    ASSERT_FALSE(f.bm.audit().has_value());
  }
  ASSERT_TRUE(preempted);
  EXPECT_EQ(f.bm.num_free_slots(), 2 - int32_t(f.sched.running().size()));
  // Whoever resumes starts from zeros.
  f.sched.remove(a->is_running() ? a : b);
  for (int step = 40; step < 45; ++step) {
    StepPlan p = f.sched.schedule(step);
    for (const auto& sc : p.scheduled)
      if (sc.seq->num_computed == 0) EXPECT_EQ(f.bm.state_io(sc.seq->id).in, kNoState);
    f.complete(p);
  }
  EXPECT_FALSE(f.bm.audit().has_value());
}

TEST(SchedulerStateSlots, ASlotBoundQueueDrainsWithoutPreemption) {
  Fixture f(256, no_time_budget(), 4, /*state_slots=*/3);
  for (int i = 0; i < 20; ++i) f.add(3 + i % 5, 0, 12);
  int step = 1;
  for (; step < 2000 && !(f.sched.running().empty() && f.sched.waiting().empty()); ++step) {
    StepPlan p = f.sched.schedule(step);
    EXPECT_LE(f.sched.running().size(), 3u);
    f.complete(p);
    for (Sequence* s : std::vector<Sequence*>(f.sched.running()))
      if (s->num_tokens() >= s->max_len) {
        f.sched.remove(s);
        s->state = SeqState::finished;
      }
    ASSERT_FALSE(f.bm.audit().has_value());
  }
  EXPECT_LT(step, 2000);
  EXPECT_EQ(f.sched.total_preemptions(), 0);
  EXPECT_EQ(f.bm.num_free_slots(), 3);
  EXPECT_EQ(f.bm.num_free_blocks(), 256);
}

// With checkpoints, a hybrid prompt's first pass is cut at its last block
// boundary, but a prompt that fits the step whole still counts as fitting:
// it goes before a long running prefill, as a transformer's prompt would.
TEST(SchedulerStateSlots, APromptCutAtACheckpointStillGoesBeforeALongPrefill) {
  SchedulerConfig cfg;  // time-budgeted steps (rule 6), though with no cost model: the token budget only
  cfg.max_batched_tokens = 16;
  Fixture f(64, cfg, 4, /*state_slots=*/2, /*checkpoints=*/2);
  Sequence* a = f.add(40);  // two more steps of prefill after the first
  StepPlan p = f.sched.schedule(1);
  EXPECT_EQ(tokens_of(p, a), 16);
  f.complete(p);
  Sequence* b = f.add(6);  // checkpoints at 4: the first pass computes 4 of 6
  p = f.sched.schedule(2);
  EXPECT_EQ(tokens_of(p, b), 4);
  EXPECT_EQ(tokens_of(p, a), 12);
  f.complete(p);
  p = f.sched.schedule(3);
  EXPECT_EQ(tokens_of(p, b), 2);  // the rest of its prompt: it samples
  EXPECT_TRUE(p.scheduled.front().sample);
  EXPECT_FALSE(f.bm.audit().has_value());
}

}  // namespace
}  // namespace pagoda
