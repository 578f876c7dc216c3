// The engine on the real stories260K model: batching, chunked prefill,
// preemption and prefix caching change nothing in the greedy tokens, and the
// production failures (a)-(e) of the engine issue each have a regression test.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "engine/engine.h"
#include "engine/output_queue.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Engine> make_engine(EngineConfig cfg) {
  cfg.audit_every_step = true;
  if (cfg.log_interval_s == 5) cfg.log_interval_s = 0;
  return Engine::load(testing::shared_path("models/stories260K.gguf"), cfg);
}

std::vector<TokenId> random_prompt(std::mt19937& rng, size_t n) {
  std::vector<TokenId> p = {1};
  while (p.size() < n) p.push_back(TokenId(3 + rng() % 509));
  return p;
}

Request greedy(std::vector<TokenId> prompt, int32_t max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// Waits (bounded) until the engine has received `received` requests and
// finished them all, and returns its stats.
EngineStats wait_drained(const Engine& e, int64_t received) {
  for (int i = 0; i < 3000; ++i) {
    const auto s = e.snapshot();
    if (s.requests_received >= received && s.requests_finished() == s.requests_received && s.running == 0 &&
        s.waiting == 0 && e.inbox_size() == 0)
      return s;
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "engine did not drain";
  return e.snapshot();
}

// Captures the engine's log lines.
struct LogCapture {
  LogCapture() {
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream);
    old = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    spdlog::set_level(spdlog::level::info);
  }
  ~LogCapture() { spdlog::set_default_logger(old); }
  int count(const std::string& needle) {
    const std::string s = text();
    int n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }
  std::string text() {
    sink->flush();
    return stream.str();
  }
  std::ostringstream stream;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink;
  std::shared_ptr<spdlog::logger> old;
};

// Greedy and seeded requests alike give the same tokens alone and in a crowd.
TEST(EngineRealModel, BatchingChunkingPreemptionAndPrefixHitsChangeNoToken) {
  std::mt19937 rng(11);
  const auto shared = random_prompt(rng, 40);
  std::vector<Request> requests;
  for (int i = 0; i < 12; ++i) {
    auto p = i % 2 ? shared : random_prompt(rng, 20 + rng() % 60);
    for (int j = 0; j < 5 + i; ++j) p.push_back(TokenId(3 + rng() % 509));
    requests.push_back(greedy(p, 30 + i * 3));
    if (i % 3 == 1) {  // seeded sampling must survive preemption too
      requests.back().sampling.temperature = 0.9f;
      requests.back().sampling.seed = 100 + i;
    }
  }
  // One at a time, whole prompts, no cache: the reference.
  std::vector<std::vector<TokenId>> expected;
  {
    EngineConfig cfg;
    cfg.prefix_caching = false;
    cfg.sched.max_num_seqs = 1;
    auto e = make_engine(cfg);
    for (const auto& r : requests) expected.push_back(e->generate({r})[0].choices[0].tokens);
  }
  // Everything at once through a small pool, small chunks, prefix caching.
  EngineConfig cfg;
  cfg.kv_cache_tokens = 512;
  cfg.block_size = 8;
  cfg.sched.max_batched_tokens = 37;
  cfg.sched.max_num_seqs = 12;
  cfg.sched.kv_headroom_per_seq = 0;  // admit greedily, so the pool fills and preempts
  auto e = make_engine(cfg);
  const auto got = e->generate(requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(got[i].choices[0].tokens, expected[i]) << "request " << i;
  const auto s = wait_drained(*e, 12);  // the last step's statistics are published just after its deltas
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.prefix_hits, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

// (c) One sequence can never grow past the pool into a preemption loop.
TEST(EngineRealModel, LoneSequenceLongerThanPoolEndsWithLength) {
  LogCapture log;
  EngineConfig cfg;
  cfg.kv_cache_tokens = 256;
  auto e = make_engine(cfg);
  EXPECT_EQ(e->max_model_len(), 256);
  std::mt19937 rng(3);
  const auto out = e->generate({greedy(random_prompt(rng, 200), 200)});
  EXPECT_EQ(out[0].choices[0].finish, FinishReason::length);
  EXPECT_EQ(out[0].choices[0].tokens.size(), 56u);
  EXPECT_LE(log.count("preempted"), 1);
  EXPECT_EQ(wait_drained(*e, 1).preemptions, 0);
}

TEST(EngineRealModel, PromptTooLongIsRejectedAtSubmission) {
  EngineConfig cfg;
  cfg.kv_cache_tokens = 256;  // 16 blocks of 16
  auto e = make_engine(cfg);
  std::mt19937 rng(3);
  // Prompt + 1 must fit: 255 fits, 256 does not (exactly N blocks of need), 300 does not.
  EXPECT_NO_THROW(e->generate({greedy(random_prompt(rng, 255), 5)}));
  EXPECT_NO_THROW(e->generate({greedy(random_prompt(rng, 230), 5)}));  // N-1 blocks
  EXPECT_THROW(e->submit(greedy(random_prompt(rng, 256), 5), {}), InvalidArgument);
  EXPECT_THROW(e->submit(greedy(random_prompt(rng, 272), 5), {}), InvalidArgument);  // N+1 blocks
  EXPECT_EQ(wait_drained(*e, 2).kv_blocks_used, 0);
}

// (a) + (c): a crowd of long requests through a tiny pool, with failing steps.
TEST(EngineRealModel, CrowdOnTinyPoolWithFailuresAllEnd) {
  LogCapture log;
  EngineConfig cfg;
  cfg.kv_cache_tokens = 4096;
  cfg.sched.max_num_seqs = 30;
  cfg.faults = FaultSpec{.forward = 0.01, .oom = 0.05, .seed = 5};
  auto e = make_engine(cfg);
  std::mt19937 rng(8);
  std::vector<Request> reqs;
  for (int i = 0; i < 30; ++i) reqs.push_back(greedy(random_prompt(rng, 330 + rng() % 40), 60));
  const auto out = e->generate(reqs);
  int ok = 0, errors = 0;
  for (const auto& c : out) {
    const auto& ch = c.choices[0];
    if (ch.finish == FinishReason::error) {
      ++errors;
      EXPECT_NE(ch.error.find("injected fault"), std::string::npos) << ch.error;
    } else {
      EXPECT_EQ(ch.finish, FinishReason::length);
      ++ok;
    }
  }
  const auto s = wait_drained(*e, 30);
  EXPECT_GT(ok, 0);
  // Failed passes cost retries, not requests: one ends only if it fails alone.
  EXPECT_LE(errors, 3);
  EXPECT_GT(s.faults.forward + s.faults.oom, 0);
  EXPECT_GT(s.forward_retries + s.oom_retries, 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running + s.waiting, 0);
  EXPECT_EQ(s.requests_received, s.requests_finished());
  // One warning per step that preempts, with the count, never a loop of them.
  const std::string text = log.text();
  const std::regex counted("preempted (\\d+) sequences");
  int64_t logged = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), counted), end; it != end; ++it) logged += std::stoll((*it)[1]);
  EXPECT_EQ(logged, s.preemptions) << text.substr(0, 2000);
  // The engine still serves afterwards.
  e = nullptr;
}

// (a) A deterministic failure: the step's sequences end with an error naming
// the cause, the others carry on, no block stays held.
TEST(EngineRealModel, FailedStepEndsOnlyItsSequences) {
  EngineConfig cfg;
  cfg.faults.at_step = 3;
  auto e = make_engine(cfg);
  std::mt19937 rng(1);
  const auto out = e->generate({greedy(random_prompt(rng, 10), 20)});
  EXPECT_EQ(out[0].choices[0].finish, FinishReason::error);
  EXPECT_NE(out[0].choices[0].error.find("step 3"), std::string::npos);
  const auto again = e->generate({greedy(random_prompt(rng, 10), 20)});
  EXPECT_EQ(again[0].choices[0].finish, FinishReason::length);
  EXPECT_EQ(wait_drained(*e, 2).kv_blocks_used, 0);
}

// (b) Requests cancelled or timed out while waiting release everything.
TEST(EngineRealModel, AbortsAndTimeoutsWhileWaitingFreeEverything) {
  EngineConfig cfg;
  cfg.kv_cache_tokens = 512;
  cfg.sched.max_num_seqs = 2;
  cfg.faults = FaultSpec{.slow = 1.0, .slow_ms = 20};
  auto e = make_engine(cfg);
  std::mt19937 rng(4);
  std::vector<std::shared_ptr<OutputQueue>> queues;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 12; ++i) {
    auto q = OutputQueue::create();
    Request r = greedy(random_prompt(rng, 100), 50);
    if (i % 3 == 2) r.timeout_s = 0.05;
    ids.push_back(e->submit(std::move(r), q->sink()));
    queues.push_back(q);
  }
  for (size_t i = 0; i < ids.size(); i += 3) e->cancel(ids[i]);
  std::vector<FinishReason> finish(ids.size(), FinishReason::none);
  for (size_t i = 0; i < ids.size(); ++i) {
    for (;;) {
      auto out = queues[i]->pop(10s);
      ASSERT_TRUE(out) << "request " << i << " never ended";
      if (out->finish != FinishReason::none) finish[i] = out->finish;
      if (out->request_done) break;
    }
  }
  const auto s = wait_drained(*e, 12);
  for (size_t i = 0; i < ids.size(); i += 3) EXPECT_EQ(finish[i], FinishReason::abort) << i;
  EXPECT_GT(s.aborted, 0);
  EXPECT_GT(s.timed_out, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.requests_received, s.requests_finished());
}

// (d) A reader that is gone never blocks the engine: its request is aborted.
TEST(EngineRealModel, GoneReaderBecomesAnAbort) {
  EngineConfig cfg;
  cfg.faults = FaultSpec{.slow = 1.0, .slow_ms = 5};  // the request outlives the reader, even on a loaded machine
  auto e = make_engine(cfg);
  std::mt19937 rng(2);
  auto q = OutputQueue::create();
  e->submit(greedy(random_prompt(rng, 20), 400), q->sink());
  ASSERT_TRUE(q->pop(10s));
  q->close();
  const auto s = wait_drained(*e, 1);
  EXPECT_EQ(s.aborted, 1);
  EXPECT_EQ(s.kv_blocks_used, 0);
  // Others are served meanwhile and after.
  EXPECT_EQ(e->generate({greedy(random_prompt(rng, 20), 10)})[0].choices[0].tokens.size(), 10u);
}

// (e) A hung engine does not go silent: the throughput line still appears,
// at 0 T/s, while a step is slowed to 10x the log interval.
TEST(EngineRealModel, ThroughputLogAppearsDuringAHungStep) {
  LogCapture log;
  EngineConfig cfg;
  cfg.log_interval_s = 0.05;
  cfg.faults = FaultSpec{.slow = 1.0, .slow_ms = 500};
  auto e = Engine::load(testing::shared_path("models/stories260K.gguf"), cfg);
  std::mt19937 rng(2);
  auto q = OutputQueue::create();
  e->submit(greedy(random_prompt(rng, 20), 3), q->sink());
  const std::regex line(
      R"(Throughput \(T/s\) 0\.00, Prefix cache hitrate [0-9.]+%, [0-9]+ running, [0-9]+ waiting, KV [0-9.]+% used, [0-9]+ preemptions)");
  for (int i = 0; i < 200; ++i) {
    const std::string t = log.text();
    if (std::distance(std::sregex_iterator(t.begin(), t.end(), line), std::sregex_iterator()) >= 3) break;
    std::this_thread::sleep_for(10ms);
  }
  const std::string t = log.text();
  EXPECT_GE(std::distance(std::sregex_iterator(t.begin(), t.end(), line), std::sregex_iterator()), 3) << t;
  e->cancel(1);
}

TEST(EngineRealModel, ChoicesShareThePromptAndEndSeparately) {
  EngineConfig cfg;
  auto e = make_engine(cfg);
  std::mt19937 rng(9);
  Request r = greedy(random_prompt(rng, 50), 12);
  r.n = 4;
  r.sampling.temperature = 1.0;
  r.sampling.seed = 77;
  const auto out = e->generate({r});
  ASSERT_EQ(out[0].choices.size(), 4u);
  for (const auto& c : out[0].choices) {
    EXPECT_EQ(c.finish, FinishReason::length);
    EXPECT_EQ(c.tokens.size(), 12u);
  }
  EXPECT_NE(out[0].choices[0].tokens, out[0].choices[1].tokens);
  const auto s = wait_drained(*e, 1);
  // The prompt was computed once: 50 prompt tokens + 4 x 11 decode tokens.
  EXPECT_EQ(s.tokens_processed, 50 + 4 * 11);
  // Same seed, same choices.
  EXPECT_EQ(e->generate({r})[0].choices[2].tokens, out[0].choices[2].tokens);
}

// The dashboard's pictures cost the engine thread milliseconds on a large
// pool, so an unwatched engine builds none; the first reader gets the stale
// one at once and wakes the engine (even an idle one) for a fresh one; a
// watched engine builds them at the configured pace.
TEST(EngineRealModel, SnapshotsAreBuiltOnlyWhileWatched) {
  EngineConfig cfg;
  cfg.snapshot_interval_s = 0.001;
  auto e = make_engine(cfg);
  std::mt19937 rng(7);
  e->submit(greedy(random_prompt(rng, 20), 60), {});
  wait_drained(*e, 1);
  auto first = e->state_snapshot();  // the picture taken at start: nobody watched the run
  ASSERT_TRUE(first);
  EXPECT_EQ(first->version, 1u);
  EXPECT_TRUE(first->finishes.empty());
  std::shared_ptr<const EngineSnapshot> fresh;
  for (int i = 0; i < 200 && !e->state_snapshot_current(); ++i) std::this_thread::sleep_for(5ms);
  fresh = e->state_snapshot();
  EXPECT_TRUE(e->state_snapshot_current());
  EXPECT_EQ(fresh->version, 2u);  // one picture for the reader, of the drained engine
  EXPECT_EQ(fresh->finishes.size(), 1u);

  e->submit(greedy(random_prompt(rng, 20), 200), {});
  uint64_t seen = fresh->version;
  int changes = 0;
  for (int i = 0; i < 3000 && e->snapshot().requests_finished() < 2; ++i) {
    const auto s = e->state_snapshot();  // watching
    changes += s->version != seen;
    seen = s->version;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(changes, 3);  // pictures kept coming while watched
}

}  // namespace
}  // namespace pagoda
