// The scheduling policy on its own: sequences and a block manager in, a plan out.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>

#include "util/error.h"
#include "sched/scheduler_fixture.h"

namespace pagoda {
namespace {

// No admission headroom: what the preemption tests below are about.
constexpr double kNoWatermark = 0;
constexpr int32_t kNoHeadroom = 0;

TEST(Scheduler, ChunksPrefillsWithinTheTokenBudget) {
  Fixture f(64, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 10});
  Sequence* a = f.add(25);
  auto p = f.sched.schedule(1);
  EXPECT_EQ(tokens_of(p, a), 10);
  EXPECT_FALSE(p.scheduled[0].sample);
  f.complete(p);
  p = f.sched.schedule(2);
  EXPECT_EQ(tokens_of(p, a), 10);
  f.complete(p);
  p = f.sched.schedule(3);
  EXPECT_EQ(tokens_of(p, a), 5);
  EXPECT_TRUE(p.scheduled[0].sample);  // the last prompt chunk samples
}

TEST(Scheduler, DecodesComeBeforeNewPrefills) {
  Fixture f(64, SchedulerConfig{.max_num_seqs = 8, .max_batched_tokens = 8});
  Sequence* a = f.add(4);
  f.complete(f.sched.schedule(1));  // a is decoding now
  Sequence* b = f.add(20);
  const auto p = f.sched.schedule(2);
  EXPECT_EQ(tokens_of(p, a), 1);
  EXPECT_EQ(tokens_of(p, b), 7);  // the rest of the budget
  EXPECT_EQ(p.num_tokens, 8);
}

TEST(Scheduler, RespectsMaxNumSeqs) {
  Fixture f(64, SchedulerConfig{.max_num_seqs = 2, .max_batched_tokens = 100});
  f.add(3);
  f.add(3);
  Sequence* c = f.add(3);
  const auto p = f.sched.schedule(1);
  EXPECT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(tokens_of(p, c), 0);
  EXPECT_EQ(f.sched.waiting().size(), 1u);
}

TEST(Scheduler, PreemptsTheNewestLowestPriorityAndNotAgainInThatStep) {
  // 6 blocks of 4 tokens. Three prompts of 8 tokens fill all six.
  Fixture f(6, SchedulerConfig{.max_num_seqs = 8,
                               .max_batched_tokens = 100,
                               .kv_watermark = kNoWatermark,
                               .kv_headroom_per_seq = kNoHeadroom});
  Sequence* a = f.add(8, 0);
  Sequence* b = f.add(8, 0);
  Sequence* c = f.add(8, 1);  // lowest priority
  f.complete(f.sched.schedule(1));
  // Each now has 9 tokens, 2 full blocks: the next decode needs a block each.
  const auto p = f.sched.schedule(2);
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], c);
  EXPECT_EQ(c->state, SeqState::preempted);
  EXPECT_EQ(c->num_computed, 0);
  EXPECT_EQ(c->num_tokens(), 9);  // keeps its generated token
  EXPECT_FALSE(f.bm.contains(c->id));
  EXPECT_EQ(tokens_of(p, a), 1);
  EXPECT_EQ(tokens_of(p, b), 1);
  EXPECT_EQ(tokens_of(p, c), 0);  // not re-admitted in the step that preempted it
  EXPECT_EQ(f.sched.total_preemptions(), 1);
}

TEST(Scheduler, ASequenceThatIsTheLowestPreemptsItselfOnce) {
  Fixture f(4, SchedulerConfig{.max_num_seqs = 8,
                               .max_batched_tokens = 100,
                               .kv_watermark = kNoWatermark,
                               .kv_headroom_per_seq = kNoHeadroom});
  Sequence* a = f.add(8, 0);
  Sequence* b = f.add(8, 5);
  f.complete(f.sched.schedule(1));  // 4 blocks used
  const auto p = f.sched.schedule(2);
  // a (higher priority) needs a block: b is preempted; b would need one too but
  // it is gone: exactly one preemption, no loop.
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], b);
  EXPECT_EQ(tokens_of(p, a), 1);
}

TEST(Scheduler, ResumesOnlyWhenTheWholeContextFits) {
  Fixture f(7, SchedulerConfig{.max_num_seqs = 8,
                               .max_batched_tokens = 100,
                               .kv_watermark = kNoWatermark,
                               .kv_headroom_per_seq = kNoHeadroom});
  Sequence* a = f.add(8);
  Sequence* b = f.add(8);
  Sequence* c = f.add(8);
  f.complete(f.sched.schedule(1));  // 6 blocks used, each has 9 tokens
  f.sched.preempt(b, 1);            // 3 free; b needs 3 blocks for its 9 tokens
  auto p = f.sched.schedule(2);     // a and c each take a block for their decode: 1 free
  EXPECT_EQ(tokens_of(p, a), 1);
  EXPECT_EQ(tokens_of(p, c), 1);
  EXPECT_EQ(tokens_of(p, b), 0);  // 3 blocks needed, 1 free: b waits, whole
  EXPECT_EQ(f.bm.num_free_blocks(), 1);
  f.complete(p);
  f.sched.remove(c);  // 3 more free
  p = f.sched.schedule(3);
  EXPECT_EQ(tokens_of(p, b), 5);  // its whole context at once, less the cached first block
  EXPECT_TRUE(p.scheduled.back().sample);
}

TEST(Scheduler, BypassIsBoundedThenTheHeadWaitsForRoom) {
  // A big request at the head cannot fit while smaller ones keep arriving.
  Fixture f(8, SchedulerConfig{.max_num_seqs = 16,
                               .max_batched_tokens = 100,
                               .max_bypass = 2,
                               .kv_watermark = kNoWatermark,
                               .kv_headroom_per_seq = kNoHeadroom});
  Sequence* filler = f.add(20);  // 5 blocks
  f.complete(f.sched.schedule(1));
  Sequence* big = f.add(16);  // needs 4 blocks + room: only 3 free
  int admitted_past = 0;
  for (int step = 2; step < 10; ++step) {
    Sequence* small = f.add(2);
    const auto p = f.sched.schedule(step);
    if (tokens_of(p, small) > 0) ++admitted_past;
    f.complete(p);
    EXPECT_LE(big->bypassed, 2);
  }
  EXPECT_EQ(admitted_past, 2);  // then nobody passes the head
  (void)filler;
}

TEST(Scheduler, PreemptedTooOftenIsBoosted) {
  Fixture f(64, SchedulerConfig{.max_preemptions_per_request = 2});
  Sequence* a = f.add(4, 9);
  Sequence* b = f.add(4, 0);
  f.complete(f.sched.schedule(1));
  f.sched.preempt(a, 1);
  EXPECT_FALSE(a->boosted);
  f.complete(f.sched.schedule(2));
  f.sched.preempt(a, 2);
  EXPECT_TRUE(a->boosted);
  EXPECT_TRUE(admission_before(*a, *b));  // ahead of everyone now
}

TEST(Scheduler, RemoveIsIdempotentAndFreesBlocks) {
  Fixture f(16);
  Sequence* a = f.add(9);
  f.complete(f.sched.schedule(1));
  EXPECT_TRUE(f.bm.contains(a->id));
  f.sched.remove(a);
  f.sched.remove(a);
  EXPECT_FALSE(f.bm.contains(a->id));
  EXPECT_TRUE(f.sched.running().empty());
  EXPECT_EQ(f.bm.num_free_blocks(), 16);
  EXPECT_FALSE(f.bm.audit().has_value());
}

TEST(Scheduler, InjectedAllocationFailureAdmitsNothing) {
  BlockManager bm(BlockManagerConfig{16, 4, true, AllocPolicy::kPaged});
  Scheduler sched(SchedulerConfig{}, bm, [] { return true; });
  Sequence s;
  s.id = 1;
  s.tokens = {1, 2, 3};
  s.num_prompt = 3;
  s.max_len = 100;
  sched.add(&s);
  EXPECT_TRUE(sched.schedule(1).empty());
  EXPECT_EQ(sched.waiting().size(), 1u);
  EXPECT_EQ(bm.num_free_blocks(), 16);
}

TEST(Scheduler, AdmissionKeepsHeadroomForTheRunningSequencesToGrow) {
  auto run = [](int32_t headroom) {
    Fixture f(10, SchedulerConfig{.max_num_seqs = 8,
                                  .max_batched_tokens = 100,
                                  .kv_watermark = kNoWatermark,
                                  .kv_headroom_per_seq = headroom});
    for (int i = 0; i < 5; ++i) f.add(8);  // 2 blocks each; at 9 tokens each needs a third
    auto p = f.sched.schedule(1);
    const size_t admitted = p.scheduled.size();
    f.complete(p);
    p = f.sched.schedule(2);
    return std::make_pair(admitted, p.preempted.size());
  };
  // One block per running sequence kept back: a (free), b (2+2 <= 8), c (2+3 <= 6), not d (2+4 > 4).
  const auto [admitted, preempted] = run(1);
  EXPECT_EQ(admitted, 3u);
  EXPECT_EQ(preempted, 0u);  // each takes its next block from the headroom
  const auto [admitted_greedy, preempted_greedy] = run(kNoHeadroom);
  EXPECT_EQ(admitted_greedy, 5u);
  EXPECT_GT(preempted_greedy, 0u);  // the pool was full: the first decodes preempt
}

TEST(Scheduler, WatermarkIsAShareOfThePoolWaivedWhenNothingRuns) {
  Fixture f(10, SchedulerConfig{.max_num_seqs = 8,
                                .max_batched_tokens = 100,
                                .kv_watermark = 0.25,
                                .kv_headroom_per_seq = kNoHeadroom});  // ceil(2.5) = 3 blocks
  Sequence* whole = f.add(40);                                         // all 10 blocks: admitted, nothing else runs
  auto p = f.sched.schedule(1);
  EXPECT_EQ(tokens_of(p, whole), 40);
  f.complete(p);
  f.sched.remove(whole);
  Sequence* a = f.add(4);   // 1 block
  Sequence* b = f.add(24);  // 6 blocks + 3 kept = 9 of the 9 left
  Sequence* c = f.add(4);   // 1 + 3 > 3
  p = f.sched.schedule(2);
  EXPECT_EQ(tokens_of(p, a), 4);
  EXPECT_EQ(tokens_of(p, b), 24);
  EXPECT_EQ(tokens_of(p, c), 0);
  EXPECT_EQ(f.bm.num_free_blocks(), 3);
}

TEST(Scheduler, NobodyPassesAPreemptedHead) {
  Fixture f(8, SchedulerConfig{.max_num_seqs = 16,
                               .max_batched_tokens = 100,
                               .kv_watermark = kNoWatermark,
                               .kv_headroom_per_seq = kNoHeadroom});
  Sequence* a = f.add(16);  // 4 blocks
  Sequence* b = f.add(12);  // 3 blocks
  f.complete(f.sched.schedule(1));
  f.sched.preempt(b, 1);  // 4 free; b needs 4 for its 13 tokens
  Sequence* small = f.add(2);
  auto p = f.sched.schedule(2);  // a's decode takes a block: 3 free
  EXPECT_EQ(tokens_of(p, a), 1);
  EXPECT_EQ(tokens_of(p, b), 0);
  EXPECT_EQ(tokens_of(p, small), 0) << "a fresh request took the blocks the preempted one gave up";
  f.complete(p);
  f.sched.remove(a);
  p = f.sched.schedule(3);
  EXPECT_GT(tokens_of(p, b), 0);
  EXPECT_GT(tokens_of(p, small), 0);
}

TEST(Scheduler, ReserveModeKeepsNoHeadroom) {
  BlockManager bm(BlockManagerConfig{8, 4, true, AllocPolicy::kReserve});
  Scheduler sched(SchedulerConfig{.kv_watermark = 0.5, .kv_headroom_per_seq = 2}, bm);
  Sequence s[2];
  for (int i = 0; i < 2; ++i) {
    s[i].id = SeqId(i + 1);
    s[i].tokens = {int32_t(10 * i + 1), 2, 3};
    s[i].num_prompt = 3;
    s[i].max_len = 16;  // 4 blocks reserved each: the whole pool
    s[i].arrival = uint64_t(i);
    sched.add(&s[i]);
  }
  EXPECT_EQ(sched.schedule(1).scheduled.size(), 2u);
  EXPECT_EQ(bm.num_free_blocks(), 0);
}

TEST(Scheduler, RejectsABadWatermark) {
  BlockManager bm(BlockManagerConfig{8, 4, true, AllocPolicy::kPaged});
  EXPECT_THROW(Scheduler(SchedulerConfig{.kv_watermark = 1.0}, bm), InvalidArgument);
  EXPECT_THROW(Scheduler(SchedulerConfig{.kv_watermark = -0.1}, bm), InvalidArgument);
  EXPECT_THROW(Scheduler(SchedulerConfig{.kv_headroom_per_seq = -1}, bm), InvalidArgument);
}

}  // namespace
}  // namespace pagoda
