// The dashboard's snapshots and their deltas, over random runs of the real
// EngineCore on the fake model: a snapshot tells the truth about the block
// pool and the queues, and a delta applied to the old snapshot gives the new
// one, for consecutive snapshots and for ones steps apart.
#include "engine/snapshot.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "engine/engine_core.h"
#include "engine/fake_runner.h"
#include "engine/snapshot_delta.h"

namespace pagoda {
namespace {

constexpr int32_t kVocab = 50;

struct EngineRun {
  EngineRun(bool paged, int32_t blocks, uint32_t seed) : rng(seed) {
    spdlog::set_level(spdlog::level::err);
    EngineConfig cfg;
    cfg.block_size = 4;
    cfg.paged = paged;
    cfg.audit_every_step = true;
    cfg.log_interval_s = 0;
    cfg.sched.max_num_seqs = 6;
    cfg.max_n = 3;
    clock = std::make_shared<ManualClock>();
    auto runner = std::make_unique<testing::FakeRunner>(kVocab, blocks, cfg.block_size, 256);
    core = std::make_unique<EngineCore>(cfg, std::move(runner), blocks, nullptr, clock, std::vector<TokenId>{});
  }
  // Adds a request sharing a prefix with others now and then (prefix hits).
  void add() {
    Request r;
    const int32_t len = std::uniform_int_distribution<int32_t>(1, 30)(rng);
    const int32_t family = std::uniform_int_distribution<int32_t>(0, 2)(rng);
    for (int32_t i = 0; i < len; ++i) r.prompt.push_back(i < 12 ? 3 + family + i : 3 + int32_t(rng() % 40));
    r.sampling.temperature = 0;
    r.sampling.max_tokens = std::uniform_int_distribution<int32_t>(1, 20)(rng);
    r.priority = int32_t(rng() % 3);
    r.n = rng() % 5 == 0 ? 2 : 1;
    if (rng() % 7 == 0) r.timeout_s = 0.5;
    core->validate(r);
    const uint64_t id = next_id++;
    core->add(id, std::move(r), [](RequestOutput&&) { return true; });
    open.push_back(id);
  }
  // One random action and a step.
  void act() {
    const uint32_t a = rng() % 10;
    if (a < 4) add();
    if (a == 4 && !open.empty()) core->cancel(open[rng() % open.size()]);
    clock->advance(0.05);
    core->step();
  }
  std::shared_ptr<const EngineSnapshot> snap() {
    auto s = core->take_snapshot();
    s->version = ++version;
    return s;
  }
  std::mt19937 rng;
  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<EngineCore> core;
  std::vector<uint64_t> open;
  uint64_t next_id = 1, version = 0;
};

// What the snapshot says agrees with the block manager and the scheduler.
void expect_truthful(const EngineSnapshot& s, const EngineCore& core) {
  const BlockManager& bm = core.blocks();
  ASSERT_EQ(s.blocks.size(), size_t(bm.num_blocks()));
  int32_t used = 0, cached = 0;
  for (size_t b = 0; b < s.blocks.size(); ++b) {
    const BlockView& v = s.blocks[b];
    EXPECT_EQ(v.ref_count, bm.ref_count(BlockId(b)));
    EXPECT_EQ(v.owners.size(), size_t(v.ref_count)) << "block " << b;
    EXPECT_EQ(v.state == BlockState::cached, v.lru_rank >= 0);
    EXPECT_EQ(v.hash_prefix != 0, bm.block_hash(BlockId(b)).has_value());
    EXPECT_LE(v.tokens, s.block_size);
    used += v.ref_count > 0;
    cached += v.state == BlockState::cached;
    if (v.ref_count == 0) {
      EXPECT_TRUE(v.state == BlockState::free || v.state == BlockState::cached);
    }
    if (v.ref_count > 1) {
      EXPECT_EQ(v.state, BlockState::shared);
    }
  }
  const KvStats kv = bm.stats();
  EXPECT_EQ(used, kv.used_blocks);
  EXPECT_EQ(cached, kv.cached_blocks);
  EXPECT_EQ(s.requests.size(), core.scheduler().running().size() + core.scheduler().waiting().size());
  for (const RequestView& r : s.requests) EXPECT_LE(r.computed_tokens, r.prompt_tokens + r.generated_tokens);
}

// What the random runs showed, summed over seeds: the test is only as good as this.
struct Seen {
  std::array<int, 5> states{};
  int preempted = 0, finishes = 0;
};

void run_random(bool paged, uint32_t seed, Seen& seen) {
  EngineRun run(paged, /*blocks=*/24, seed);
  std::vector<std::shared_ptr<const EngineSnapshot>> history{run.snap()};
  for (int i = 0; i < 300; ++i) {
    run.act();
    history.push_back(run.snap());
    const EngineSnapshot& now = *history.back();
    ASSERT_NO_FATAL_FAILURE(expect_truthful(now, *run.core));
    for (const BlockView& b : now.blocks) ++seen.states[size_t(b.state)];
    for (const RequestView& r : now.requests) seen.preempted += r.state == SeqState::preempted;
    seen.finishes = std::max(seen.finishes, int(now.finishes.size()));
    // Consecutive, and a few steps apart (a reader that skipped ticks).
    for (size_t back : {size_t(1), size_t(7)}) {
      if (history.size() <= back) continue;
      const EngineSnapshot& old = *history[history.size() - 1 - back];
      const SnapshotDelta d = diff(old, now);
      ASSERT_EQ(apply(old, d), now) << "seed " << seed << " step " << i << " back " << back;
    }
  }
  // Drained: nothing queued, every block free or cached, the finishes listed.
  for (int i = 0; i < 2000 && run.core->has_work(); ++i) run.core->step();
  const auto last = run.snap();
  EXPECT_TRUE(last->requests.empty());
  for (const BlockView& b : last->blocks) EXPECT_TRUE(b.state == BlockState::free || b.state == BlockState::cached);
  EXPECT_FALSE(last->finishes.empty());
  EXPECT_EQ(apply(*history.back(), diff(*history.back(), *last)), *last);
}

TEST(Snapshot, DeltaAppliedToTheOldSnapshotGivesTheNewPaged) {
  Seen seen;
  for (uint32_t seed = 1; seed <= 4; ++seed) run_random(true, seed, seen);
  for (BlockState st : {BlockState::free, BlockState::cached, BlockState::used, BlockState::shared})
    EXPECT_GT(seen.states[size_t(st)], 0) << to_string(st);
  EXPECT_GT(seen.preempted, 0);
  EXPECT_GT(seen.finishes, 10);
}

TEST(Snapshot, DeltaAppliedToTheOldSnapshotGivesTheNewReserveMode) {
  Seen seen;
  for (uint32_t seed = 11; seed <= 13; ++seed) run_random(false, seed, seen);
  EXPECT_GT(seen.states[size_t(BlockState::reserved)], 0);
  EXPECT_GT(seen.states[size_t(BlockState::used)], 0);
}

TEST(Snapshot, ShowsSharedPrefixBlocksAndOwners) {
  EngineRun run(true, 32, 5);
  Request r;
  for (int32_t i = 0; i < 17; ++i) r.prompt.push_back(3 + i);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 8;
  Request r2 = r;
  run.core->add(1, std::move(r), [](RequestOutput&&) { return true; });
  run.core->step();  // prefill: its full blocks get hashed
  run.core->add(2, std::move(r2), [](RequestOutput&&) { return true; });
  run.core->step();  // admits the second with a prefix hit
  const auto s = run.snap();
  int shared = 0;
  for (const BlockView& b : s->blocks)
    if (b.state == BlockState::shared) {
      ++shared;
      EXPECT_EQ(b.owners, (std::vector<uint64_t>{1, 2}));
      EXPECT_EQ(b.tokens, 4);
    }
  EXPECT_EQ(shared, 4);  // 17 tokens: 4 full blocks shared
  ASSERT_EQ(s->requests.size(), 2u);
  EXPECT_EQ(s->requests[1].cached_tokens, 16);
}

TEST(Snapshot, RecentFinishesKeepTheirReasonsForAMinute) {
  EngineRun run(true, 32, 6);
  Request r;
  r.prompt = {3, 4, 5};
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 2;
  Request r2 = r;
  run.core->add(1, std::move(r), [](RequestOutput&&) { return true; });
  run.core->add(2, std::move(r2), [](RequestOutput&&) { return true; });
  run.core->cancel(2);
  for (int i = 0; i < 10; ++i) run.core->step();
  auto s = run.snap();
  ASSERT_EQ(s->finishes.size(), 2u);
  EXPECT_EQ(s->finishes[0].request, 2u);
  EXPECT_EQ(s->finishes[0].reason, FinishReason::abort);
  EXPECT_EQ(s->finishes[1].reason, FinishReason::length);
  EXPECT_EQ(s->finishes[1].generated_tokens, 2);
  run.clock->advance(61);
  EXPECT_TRUE(run.snap()->finishes.empty());
}

// The engine thread pays for a snapshot at most 4 times a second: on a pool
// of 100k blocks it must stay a few milliseconds (it is printed).
TEST(Snapshot, ALargePoolIsCheapToSnapshotAndDiff) {
  EngineRun run(true, 100000, 7);
  for (int i = 0; i < 40; ++i) run.add();
  for (int i = 0; i < 5; ++i) run.core->step();
  const auto t0 = std::chrono::steady_clock::now();
  const auto a = run.snap();
  const auto t1 = std::chrono::steady_clock::now();
  run.core->step();
  const auto b = run.snap();
  const auto t2 = std::chrono::steady_clock::now();
  const SnapshotDelta d = diff(*a, *b);
  const auto t3 = std::chrono::steady_clock::now();
  const auto ms = [](auto x, auto y) { return std::chrono::duration<double, std::milli>(y - x).count(); };
  std::printf("100k blocks: snapshot %.2f ms, diff %.2f ms, %zu changed runs\n", ms(t0, t1), ms(t2, t3),
              d.blocks.size());
  EXPECT_LT(ms(t0, t1), 500);  // generous: sanitizers and a loaded machine
  EXPECT_EQ(apply(*a, d), *b);
}

TEST(Snapshot, BoardHandsOutTheLatestWithoutCopying) {
  SnapshotBoard board;
  EXPECT_EQ(board.latest(), nullptr);
  auto a = std::make_shared<EngineSnapshot>();
  a->version = 1;
  board.publish(a);
  auto held = board.latest();
  auto b = std::make_shared<EngineSnapshot>();
  b->version = 2;
  board.publish(b);
  EXPECT_EQ(held->version, 1u);  // a reader's copy stays valid
  EXPECT_EQ(board.latest().get(), b.get());
}

}  // namespace
}  // namespace pagoda
