// EngineCore, stepped by hand with the fake model: cancellation in every
// state, deadlines on the virtual clock, rejections, step failures. Each
// scenario runs on a dense model and on a hybrid one (recurrent-state slots,
// fake_runner.h), which must end with every slot back as well as every block.
#include "engine/engine_core.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <set>

#include "engine/fake_runner.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr int32_t kVocab = 50;

struct Core {
  // State slots of the fake model the next Core gets (0: dense); the
  // parameterized tests set it.
  inline static int32_t state_slots = 0;

  explicit Core(EngineConfig cfg = {}, int32_t blocks = 16, int32_t block_size = 4, int32_t nan_for_token = -1) {
    spdlog::set_level(spdlog::level::err);
    cfg.block_size = block_size;
    cfg.audit_every_step = true;
    cfg.log_interval_s = 0;
    clock = std::make_shared<ManualClock>();
    auto runner =
        std::make_unique<testing::FakeRunner>(kVocab, blocks, block_size, 1024, std::vector<int32_t>{0}, state_slots);
    runner->nan_for_token = nan_for_token;
    fake = runner.get();
    core = std::make_unique<EngineCore>(cfg, std::move(runner), blocks, nullptr, clock, std::vector<TokenId>{});
  }
  ~Core() {
    if (fake) {
      EXPECT_EQ(fake->state_errors, 0) << "the fake model was handed a wrong recurrent state";
    }
  }
  uint64_t add(int32_t prompt_len, int32_t max_tokens, std::optional<double> timeout = {}, int32_t first = 3,
               int32_t n = 1) {
    Request r;
    for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back(first + i % 40);
    r.sampling.temperature = 0;
    r.sampling.max_tokens = max_tokens;
    r.timeout_s = timeout;
    r.n = n;
    const uint64_t id = next_id++;
    core->validate(r);  // add() takes validated requests
    core->add(id, std::move(r), [this, id](RequestOutput&& o) {
      auto& toks = tokens[id][o.choice];
      toks.insert(toks.end(), o.tokens.begin(), o.tokens.end());
      if (o.finish != FinishReason::none) finish[id] = o.finish;
      if (!o.error.empty()) error[id] = o.error;
      if (o.request_done) done[id]++;
      return true;
    });
    return id;
  }
  void drain(int max_steps = 100000) {
    for (int i = 0; i < max_steps && core->num_requests() > 0; ++i) core->step();
    ASSERT_EQ(core->num_requests(), 0u);
    EXPECT_EQ(used(), 0);
  }
  const Sequence* seq() const {
    for (const Sequence* s : core->scheduler().running()) return s;
    for (const Sequence* s : core->scheduler().waiting()) return s;
    return nullptr;
  }
  // Blocks and state slots in use: every end path must bring both to 0.
  int32_t used() const {
    const auto& b = core->blocks();
    return b.num_blocks() - b.num_free_blocks() + b.num_state_slots() - b.num_free_slots();
  }

  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<EngineCore> core;
  std::map<uint64_t, FinishReason> finish;
  std::map<uint64_t, int> done;
  std::map<uint64_t, std::string> error;
  std::map<uint64_t, std::map<int32_t, std::vector<TokenId>>> tokens;  // per choice
  testing::FakeRunner* fake = nullptr;                                 // owned by the core
  uint64_t next_id = 1;
};

// The parameter: the fake model's state slots (0: a dense model; else
// plenty, so that only the tests that shrink them feel them).
class EngineCoreModes : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override { Core::state_slots = GetParam(); }
  void TearDown() override { Core::state_slots = 0; }
};

TEST_P(EngineCoreModes, CancelInEveryStateReturnsBlocksAtOnce) {
  EngineConfig cfg;
  cfg.sched.max_batched_tokens = 4;  // a 10-token prompt takes three steps
  // waiting
  {
    Core c(cfg);
    const uint64_t id = c.add(10, 5);
    c.core->cancel(id);
    EXPECT_EQ(c.finish[id], FinishReason::abort);
    EXPECT_EQ(c.used(), 0);
  }
  // mid-prefill
  {
    Core c(cfg);
    const uint64_t id = c.add(10, 5);
    c.core->step();
    ASSERT_EQ(c.seq()->state, SeqState::prefill);
    EXPECT_GT(c.used(), 0);
    c.core->cancel(id);
    EXPECT_EQ(c.used(), 0);
    EXPECT_EQ(c.core->num_requests(), 0u);
  }
  // decoding
  {
    Core c(cfg);
    const uint64_t id = c.add(3, 50);
    c.core->step();
    c.core->step();
    ASSERT_EQ(c.seq()->state, SeqState::decode);
    c.core->cancel(id);
    EXPECT_EQ(c.used(), 0);
  }
  // preempted: a long-running low-priority sequence pushed out by pressure
  {
    EngineConfig greedy = cfg;  // admits b without headroom, so pressure comes at once
    greedy.sched.kv_watermark = 0;
    greedy.sched.kv_headroom_per_seq = 0;
    Core c(greedy, 4, 4);  // 16 tokens in all
    const uint64_t a = c.add(6, 40);
    for (int i = 0; i < 4; ++i) c.core->step();
    const uint64_t b = c.add(6, 40);
    bool preempted = false;
    for (int i = 0; i < 40 && !preempted; ++i) {
      c.core->step();
      for (const Sequence* s : c.core->scheduler().waiting()) preempted |= s->state == SeqState::preempted;
    }
    ASSERT_TRUE(preempted);
    c.core->cancel(a);
    c.core->cancel(b);
    EXPECT_EQ(c.used(), 0);
  }
  // finished: cancelling again changes nothing, and the terminal event came once
  {
    Core c(cfg);
    const uint64_t id = c.add(3, 2);
    for (int i = 0; i < 5; ++i) c.core->step();
    EXPECT_EQ(c.finish[id], FinishReason::length);
    c.core->cancel(id);
    c.core->cancel(id);
    EXPECT_EQ(c.done[id], 1);
    EXPECT_EQ(c.finish[id], FinishReason::length);
  }
}

TEST_P(EngineCoreModes, DeadlinesExpireWhereverTheRequestIs) {
  EngineConfig cfg;
  cfg.sched.max_num_seqs = 1;
  Core c(cfg);
  const uint64_t running = c.add(3, 1000, 2.0);
  const uint64_t waiting = c.add(3, 1000, 1.0);  // cannot start: max_num_seqs = 1
  c.core->step();
  c.clock->advance(1.5);
  c.core->step();
  EXPECT_EQ(c.finish[waiting], FinishReason::timeout);
  EXPECT_EQ(c.finish.count(running), 0u);
  c.clock->advance(1.0);
  c.core->step();
  EXPECT_EQ(c.finish[running], FinishReason::timeout);
  EXPECT_EQ(c.used(), 0);
  EXPECT_EQ(c.core->stats().timed_out, 2);
}

TEST(EngineCore, RejectsBadRequestsWithoutChangingAnything) {
  Core c({}, 16, 4);  // 64 tokens
  Request r;
  EXPECT_THROW(c.core->validate(r), InvalidArgument);  // empty
  r.prompt = {1, 2, kVocab};
  EXPECT_THROW(c.core->validate(r), InvalidArgument);  // outside the vocabulary
  r.prompt.assign(63, 5);
  EXPECT_NO_THROW(c.core->validate(r));  // 63 + 1 fits exactly
  r.prompt.assign(64, 5);
  EXPECT_THROW(c.core->validate(r), InvalidArgument);
  r.prompt = {1};
  r.n = 0;
  EXPECT_THROW(c.core->validate(r), InvalidArgument);
  r.n = 1;
  r.sampling.top_p = 0;
  EXPECT_THROW(c.core->validate(r), InvalidArgument);
  EXPECT_EQ(c.core->num_requests(), 0u);
  EXPECT_EQ(c.core->stats().requests_received, 0);
}

TEST_P(EngineCoreModes, FailedStepEndsItsSequencesAndRollsBack) {
  EngineConfig cfg;
  cfg.faults.at_step = 2;
  Core c(cfg);
  const uint64_t a = c.add(5, 10);
  c.core->step();                   // a prefills
  const uint64_t b = c.add(5, 10);  // arrives after the failing step's plan? no: joins step 2
  c.core->step();                   // fails: both a (decode) and b (prefill) were in it
  EXPECT_EQ(c.finish[a], FinishReason::error);
  EXPECT_EQ(c.finish[b], FinishReason::error);
  EXPECT_EQ(c.used(), 0);
  // Only a's committed full block from step 1 (a hybrid model caches none).
  EXPECT_EQ(c.core->blocks().stats().hashed_blocks, Core::state_slots > 0 ? 0 : 1);
  const uint64_t d = c.add(5, 3);
  for (int i = 0; i < 5; ++i) c.core->step();
  EXPECT_EQ(c.finish[d], FinishReason::length);
  EXPECT_EQ(c.core->stats().step_failures, 1);
}

// A lost device is not retried or isolated: the step's sequences and every
// waiting request end with the cause, every block and slot is free, the
// prefix cache is gone, and a request that comes later ends at once.
TEST_P(EngineCoreModes, ALostDeviceEndsEveryRequestAndRunsNothingMore) {
  EngineConfig cfg;
  cfg.faults.lost_at_step = 3;
  Core c(cfg, 16);
  std::vector<uint64_t> ids = {c.add(5, 20), c.add(5, 20)};
  c.core->step();
  c.core->step();                                           // both decode
  for (int i = 0; i < 6; ++i) ids.push_back(c.add(9, 20));  // more than the pool holds: some wait
  ASSERT_GT(c.core->scheduler().waiting().size() + 2, 2u);
  c.core->step();  // step 3: the device is lost
  EXPECT_EQ(c.core->num_requests(), 0u);
  for (uint64_t id : ids) {
    EXPECT_EQ(c.finish[id], FinishReason::error) << id;
    EXPECT_EQ(c.done[id], 1) << id;
    EXPECT_NE(c.error[id].find("the device was lost: injected fault: an illegal memory access"), std::string::npos)
        << c.error[id];
  }
  EXPECT_EQ(c.used(), 0);
  EXPECT_EQ(c.core->blocks().stats().hashed_blocks, 0);  // the cache died with the device
  EXPECT_NE(c.core->stats().device_lost.find("illegal memory access"), std::string::npos);
  EXPECT_EQ(c.core->stats().forward_retries, 0);
  EXPECT_EQ(c.core->stats().oom_retries, 0);
  const uint64_t late = c.add(3, 5);
  const int64_t passes = c.core->stats().tokens_processed;
  c.core->step();
  EXPECT_EQ(c.finish[late], FinishReason::error);
  EXPECT_TRUE(c.tokens[late][0].empty());
  EXPECT_EQ(c.core->stats().tokens_processed, passes);  // no pass ran
  EXPECT_EQ(c.core->num_requests(), 0u);
  EXPECT_EQ(c.used(), 0);
}

TEST_P(EngineCoreModes, NonFiniteLogitsEndOnlyThatSequence) {
  Core c({}, 16, 4, /*nan_for_token=*/2);  // a prompt of just token 2 gets NaN logits
  const uint64_t bad = c.add(1, 5, {}, 2);
  const uint64_t good = c.add(3, 5, {}, 5);
  for (int i = 0; i < 10; ++i) c.core->step();
  EXPECT_EQ(c.finish[bad], FinishReason::error);
  EXPECT_EQ(c.finish[good], FinishReason::length);
  EXPECT_EQ(c.used(), 0);
}

TEST_P(EngineCoreModes, OutOfMemoryShrinksTheBatchBeforeFailingAnyone) {
  EngineConfig cfg;
  cfg.faults.oom = 0.5;
  cfg.faults.seed = 3;
  Core c(cfg, 64);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(c.add(5, 6));
  for (int i = 0; i < 200 && c.core->num_requests() > 0; ++i) c.core->step();
  EXPECT_GT(c.core->stats().oom_retries, 0);
  EXPECT_GT(c.core->stats().preemptions, 0);
  EXPECT_EQ(c.used(), 0);
  int ok = 0;
  for (uint64_t id : ids) ok += c.finish[id] == FinishReason::length;
  EXPECT_GT(ok, 0);
}

TEST_P(EngineCoreModes, PoisonedRequestsFailAloneAndTheRestComplete) {
  EngineConfig cfg;
  cfg.sched.max_num_seqs = 16;
  cfg.faults = FaultSpec{.poison = 0.1, .seed = 5};
  Core c(cfg, 256);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 300; ++i) ids.push_back(c.add(5 + i % 7, 8, {}, 3 + i % 8));
  c.drain();
  int poisoned = 0;
  for (uint64_t id : ids) {
    if (c.core->faults().is_poisoned(id)) {
      ++poisoned;
      EXPECT_EQ(c.finish[id], FinishReason::error) << id;
      EXPECT_NE(c.error[id].find("the forward pass failed for this request"), std::string::npos) << c.error[id];
      EXPECT_NE(c.error[id].find("poisoned request"), std::string::npos) << c.error[id];
    } else {
      EXPECT_EQ(c.finish[id], FinishReason::length) << id << ": " << c.error[id];
    }
  }
  EXPECT_GT(poisoned, 10);
  EXPECT_EQ(c.core->stats().faults.poisoned, poisoned);
  EXPECT_EQ(c.core->stats().errored, poisoned);
  EXPECT_GT(c.core->stats().forward_retries, 0);
}

TEST_P(EngineCoreModes, TransientForwardFailuresCostTimeNotRequests) {
  EngineConfig cfg;
  cfg.sched.max_num_seqs = 32;
  cfg.faults = FaultSpec{.forward = 0.05, .seed = 11};
  Core c(cfg, 512);
  constexpr int kRequests = 2000;
  for (int i = 0; i < kRequests; ++i) c.add(4 + i % 9, 12, {}, 3 + i % 8);
  c.drain();
  const auto& st = c.core->stats();
  EXPECT_GT(st.faults.forward, 20);
  EXPECT_GT(st.forward_retries, st.faults.forward / 2);
  EXPECT_LE(st.errored, kRequests / 100) << "of " << kRequests;
  EXPECT_EQ(st.finished_length + st.errored, kRequests);
}

TEST_P(EngineCoreModes, ADeterministicFailureEndsOnlyThatSequence) {
  EngineConfig cfg;
  Core c(cfg, 64);
  c.fake->fail_for_token = 7;
  std::vector<uint64_t> ids;
  for (int k = 0; k < 9; ++k) ids.push_back(c.add(6, 10, {}, 3 + k));  // ids[4] starts with token 7
  c.drain();
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k == 4) {
      EXPECT_EQ(c.finish[ids[k]], FinishReason::error);
      EXPECT_EQ(c.error[ids[k]], "the forward pass failed for this request: fake model: cannot run token 7");
      EXPECT_TRUE(c.tokens[ids[k]][0].empty());
    } else {
      EXPECT_EQ(c.finish[ids[k]], FinishReason::length) << k << ": " << c.error[ids[k]];
      EXPECT_EQ(c.tokens[ids[k]][0].size(), 10u);
    }
  }
  EXPECT_EQ(c.core->stats().errored, 1);
  // One failing sequence of 9: isolated within the step's retry budget.
  EXPECT_EQ(c.core->stats().step_failures, 1);
}

TEST_P(EngineCoreModes, ARetriedStepMakesItsCopiesOnceAndSamplesTheSame) {
  // n = 3 shares the prompt's partial block; the first decode step copies it
  // for two of the choices. Failing that step's first pass must change nothing.
  auto run = [](std::set<int64_t> fail_calls) {
    Core c({}, 64);
    c.fake->fail_calls = std::move(fail_calls);
    const uint64_t id = c.add(5, 6, {}, 3, /*n=*/3);
    c.add(9, 6, {}, 20);
    c.drain();
    EXPECT_EQ(c.finish[id], FinishReason::length);
    EXPECT_EQ(c.core->stats().errored, 0);
    return std::make_pair(c.fake->copies_made, c.tokens);
  };
  const auto [copies, tokens] = run({});
  EXPECT_GT(copies, 0);
  for (int64_t call : {2, 3}) {
    const auto [copies_retried, tokens_retried] = run({call});
    EXPECT_EQ(copies_retried, copies) << "call " << call;
    EXPECT_EQ(tokens_retried, tokens) << "call " << call;
  }
}

TEST_P(EngineCoreModes, EveryPassOfAStepFailingStillEndsSomeoneAndDefersTheRest) {
  EngineConfig cfg;
  cfg.faults.at_step = 2;  // every pass of step 2 fails
  cfg.sched.max_num_seqs = 32;
  Core c(cfg, 256);
  for (int i = 0; i < 32; ++i) c.add(3, 4, {}, 3 + i);
  c.core->step();
  c.core->step();
  // 32 sequences, budget 2*5+2 = 12 retries: depth-first reaches lone sequences, the rest wait.
  const int64_t ended = c.core->stats().errored;
  EXPECT_GE(ended, 1);
  EXPECT_LT(ended, 32);
  EXPECT_EQ(c.core->stats().forward_retries, 12);
  c.drain();
  EXPECT_EQ(c.core->stats().finished_length + ended, 32);
}

// Seed 002 on a tiny pool: 30 requests (some with n = 2) into 12 blocks of 4
// tokens and, on the hybrid model, 3 state slots, with failing passes and
// out-of-memory steps. Everything ends within a bounded number of steps, and
// nothing stays held.
TEST_P(EngineCoreModes, ThirtyRequestsIntoATinyPoolAllEnd) {
  if (GetParam() > 0) Core::state_slots = 3;
  EngineConfig cfg;
  cfg.sched.max_num_seqs = 8;
  cfg.faults = FaultSpec{.forward = 0.05, .oom = 0.05, .seed = 7};
  Core c(cfg, 12, 4);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(c.add(5 + i % 9, 6 + i % 5, {}, 3 + i % 11, i % 5 == 0 ? 2 : 1));
  int steps = 0;
  int32_t most_running = 0;
  for (; steps < 5000 && c.core->num_requests() > 0; ++steps) {
    c.core->step();
    most_running = std::max(most_running, int32_t(c.core->scheduler().running().size()));
  }
  ASSERT_EQ(c.core->num_requests(), 0u) << "no drain after " << steps << " steps";
  EXPECT_EQ(c.used(), 0);
  if (Core::state_slots > 0) EXPECT_LE(most_running, 3);  // the slots bound the running set
  EXPECT_EQ(c.core->stats().state_slots_total, Core::state_slots);
  EXPECT_EQ(c.core->stats().state_slots_used, 0);
  EXPECT_EQ(c.core->stats().prefix_caching, Core::state_slots == 0);
  int length = 0;
  for (uint64_t id : ids) length += c.finish[id] == FinishReason::length;
  EXPECT_GE(length, 25);  // failed passes cost retries; a request ends only if it fails alone
  EXPECT_EQ(c.core->stats().requests_finished(), 30);
}

// Seed 001 on a slot-bound pool: a request that waits for a state slot (the
// blocks would fit) and is aborted or times out there frees everything.
TEST_P(EngineCoreModes, AbortAndTimeoutWhileWaitingForASlot) {
  if (GetParam() > 0) Core::state_slots = 1;
  EngineConfig cfg;
  cfg.sched.max_num_seqs = 4;
  Core c(cfg, 64, 4);
  const uint64_t running = c.add(6, 20);
  const uint64_t cancelled = c.add(6, 20);
  const uint64_t expiring = c.add(6, 20, 0.5);
  c.core->step();
  if (Core::state_slots > 0) EXPECT_EQ(c.core->scheduler().waiting().size(), 2u);  // blocks to spare, no slot
  c.core->cancel(cancelled);
  EXPECT_EQ(c.finish[cancelled], FinishReason::abort);
  c.clock->advance(1.0);
  c.core->step();
  EXPECT_EQ(c.finish[expiring], FinishReason::timeout);
  c.drain();
  EXPECT_EQ(c.finish[running], FinishReason::length);
  EXPECT_EQ(c.tokens[running][0].size(), 20u);
}

// A forked choice with no slot left recomputes the prompt in a slot of its
// own later, and still gets the model's tokens.
TEST_P(EngineCoreModes, ForkWithoutASlotRecomputes) {
  if (GetParam() > 0) Core::state_slots = 2;
  EngineConfig cfg;
  Core c(cfg, 64, 4);
  const uint64_t id = c.add(7, 5, {}, 3, /*n=*/3);
  c.drain();
  EXPECT_EQ(c.finish[id], FinishReason::length);
  ASSERT_EQ(c.tokens[id].size(), 3u);
  for (const auto& [choice, toks] : c.tokens[id]) EXPECT_EQ(toks, c.tokens[id][0]) << "choice " << choice;
}

INSTANTIATE_TEST_SUITE_P(Models, EngineCoreModes, ::testing::Values(0, 64),
                         [](const auto& info) { return std::string(info.param > 0 ? "hybrid" : "dense"); });

}  // namespace
}  // namespace pagoda
