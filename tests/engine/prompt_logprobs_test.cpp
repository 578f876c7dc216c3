// Prompt logprobs in the engine, with the fake model: every prompt token
// after the first gets the logprob of the model's row at the position before
// it, across prefill chunks, past a warm prefix cache (which such a request
// skips), for every choice, and only for requests that ask.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <map>

#include "engine/engine_core.h"
#include "engine/fake_runner.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr int32_t kVocab = 50;

struct Outputs {
  std::map<int32_t, std::vector<GeneratedLogprobs>> prompt;  // per choice
  std::map<int32_t, int> prompt_deltas;
  std::map<int32_t, std::vector<TokenId>> tokens;
  int32_t cached = -1;
  bool done = false;
};

struct PlpCore {
  PlpCore() {
    spdlog::set_level(spdlog::level::err);
    EngineConfig cfg;
    cfg.block_size = 4;
    cfg.audit_every_step = true;
    cfg.log_interval_s = 0;
    cfg.sched.max_batched_tokens = 5;  // a 14-token prompt takes several chunks
    auto runner = std::make_unique<testing::FakeRunner>(kVocab, 32, 4, 1024);
    fake = runner.get();
    core = std::make_unique<EngineCore>(cfg, std::move(runner), 32, nullptr, std::make_shared<ManualClock>(),
                                        std::vector<TokenId>{});
  }
  Outputs& run(const std::vector<TokenId>& prompt, std::optional<int32_t> plp, int32_t n = 1) {
    Request r;
    r.prompt = prompt;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 3;
    r.prompt_logprobs = plp;
    r.n = n;
    const uint64_t id = next_id++;
    core->validate(r);
    core->add(id, std::move(r), [this, id](RequestOutput&& o) {
      Outputs& out = outputs[id];
      if (!o.prompt_logprobs.empty()) {
        out.prompt[o.choice] = o.prompt_logprobs;
        ++out.prompt_deltas[o.choice];
      }
      auto& t = out.tokens[o.choice];
      t.insert(t.end(), o.tokens.begin(), o.tokens.end());
      out.cached = o.num_cached_tokens;
      out.done = out.done || o.request_done;
      return true;
    });
    for (int i = 0; i < 1000 && core->num_requests() > 0; ++i) core->step();
    EXPECT_EQ(core->num_requests(), 0u);
    return outputs[id];
  }
  testing::FakeRunner* fake = nullptr;
  std::unique_ptr<EngineCore> core;
  std::map<uint64_t, Outputs> outputs;
  uint64_t next_id = 1;
};

std::vector<TokenId> test_prompt() {
  std::vector<TokenId> p;
  for (int i = 0; i < 14; ++i) p.push_back(TokenId(3 + (i * 7) % 40));
  return p;
}

// The fake model's row puts 10 on its next token and 0 elsewhere.
double expected_logprob(const std::vector<TokenId>& prefix, TokenId token) {
  const double lse = std::log(std::exp(10.0) + double(kVocab - 1));
  return (testing::fake_next_token(prefix, kVocab) == token ? 10.0 : 0.0) - lse;
}

TEST(PromptLogprobs, EveryPromptTokenAfterTheFirstAcrossChunksAndPastTheCache) {
  PlpCore c;
  const auto prompt = test_prompt();
  const Outputs& warm = c.run(prompt, std::nullopt);  // fills the prefix cache
  EXPECT_TRUE(warm.prompt.empty());
  const Outputs& again = c.run(prompt, std::nullopt);
  EXPECT_GT(again.cached, 0);  // the cache is warm for ordinary requests
  const Outputs& o = c.run(prompt, 2, /*n=*/2);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.cached, 0) << "a prompt-logprobs request must compute its whole prompt";
  for (int32_t choice : {0, 1}) {
    ASSERT_EQ(o.prompt_deltas.at(choice), 1) << choice;
    const auto& lps = o.prompt.at(choice);
    ASSERT_EQ(lps.size(), prompt.size() - 1);
    for (size_t i = 0; i + 1 < prompt.size(); ++i) {
      const std::vector<TokenId> prefix(prompt.begin(), prompt.begin() + ptrdiff_t(i) + 1);
      EXPECT_EQ(lps[i].token, prompt[i + 1]);
      EXPECT_NEAR(lps[i].logprob, expected_logprob(prefix, prompt[i + 1]), 1e-5) << i;
      ASSERT_EQ(lps[i].top.size(), 2u);
      EXPECT_EQ(lps[i].top[0].token, testing::fake_next_token(prefix, kVocab));
      EXPECT_EQ(lps[i].rank, testing::fake_next_token(prefix, kVocab) == prompt[i + 1] ? 1 : 2);
    }
  }
  // The output is the same as without prompt logprobs.
  EXPECT_EQ(o.tokens.at(0), warm.tokens.at(0));
  EXPECT_EQ(o.tokens.at(1), warm.tokens.at(0));
}

TEST(PromptLogprobs, OutOfRangeIsRejected) {
  PlpCore c;
  Request r;
  r.prompt = test_prompt();
  r.prompt_logprobs = 21;
  EXPECT_THROW(c.core->validate(r), InvalidArgument);
  r.prompt_logprobs = -1;
  EXPECT_THROW(c.core->validate(r), InvalidArgument);
}

}  // namespace
}  // namespace pagoda
