// Constrained decoding in EngineCore with the fake model: the grammar's own
// end finishes with stop, forks share the grammar state, logprobs are of the
// masked distribution, the batch's masks are filled on a thread pool, and a
// lazy constraint waits for its trigger text.
#include "engine/constraint.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "engine/engine_core.h"
#include "engine/fake_runner.h"
#include "grammar/cache.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

constexpr int32_t kVocab = 8;
// id 2 ends generation; the others are these bytes.
const std::vector<std::string> kBytes = {"a", "b", "", "c", "ab", "x", "bc", "q"};

std::shared_ptr<const grammar::TokenVocab> toy_vocab() {
  static const auto v = std::make_shared<const grammar::TokenVocab>(kBytes, std::vector<int32_t>{2});
  return v;
}

std::string text_of(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId t : ids) s += kBytes[size_t(t)];
  return s;
}

struct Outcome {
  std::map<int32_t, std::vector<TokenId>> tokens;
  std::map<int32_t, FinishReason> finish;
  std::map<int32_t, std::string> error;
  std::vector<GeneratedLogprobs> logprobs;
};

Outcome generate(const grammar::ConstraintSpec& spec, int32_t n, std::optional<int32_t> logprobs = {},
                 int32_t max_tokens = 20, std::string after = {}, std::vector<std::pair<int32_t, float>> bias = {},
                 std::string gate = {}) {
  spdlog::set_level(spdlog::level::err);
  EngineConfig cfg;
  cfg.block_size = 4;
  cfg.audit_every_step = true;
  cfg.log_interval_s = 0;
  cfg.max_n = 4;
  grammar::GrammarCache cache;
  EngineCore core(cfg, std::make_unique<testing::FakeRunner>(kVocab, 16, 4, 256), 16, nullptr,
                  std::make_shared<ManualClock>(), {2});
  Request r;
  r.prompt = {1, 3, 0};
  r.sampling.temperature = 1;
  r.sampling.seed = 5;
  r.sampling.max_tokens = max_tokens;
  r.sampling.logprobs = logprobs;
  r.n = n;
  r.constraint = cache.tables(spec, toy_vocab());
  r.constraint_after = std::move(after);
  r.constraint_gate = std::move(gate);
  r.sampling.logit_bias = std::move(bias);
  core.validate(r);
  Outcome run;
  core.add(1, std::move(r), [&](RequestOutput&& o) {
    auto& t = run.tokens[o.choice];
    t.insert(t.end(), o.tokens.begin(), o.tokens.end());
    for (auto& lp : o.logprobs) run.logprobs.push_back(lp);
    if (o.finish != FinishReason::none) run.finish[o.choice] = o.finish, run.error[o.choice] = o.error;
    return true;
  });
  for (int i = 0; i < 200 && core.num_requests() > 0; ++i) core.step();
  EXPECT_EQ(core.num_requests(), 0u);
  EXPECT_EQ(core.blocks().num_free_blocks(), core.blocks().num_blocks());
  return run;
}

TEST(EngineConstraint, ChoicesFinishWithStopAtTheGrammarsEnd) {
  const Outcome run = generate({grammar::ConstraintSpec::Kind::choice, R"(["abc", "bcbc", "q"])"}, 3);
  ASSERT_EQ(run.finish.size(), 3u);
  for (const auto& [c, why] : run.finish) {
    EXPECT_EQ(why, FinishReason::stop) << run.error.at(c);
    const std::string t = text_of(run.tokens.at(c));
    EXPECT_TRUE(t == "abc" || t == "bcbc" || t == "q") << t;
    for (TokenId id : run.tokens.at(c)) EXPECT_NE(id, 2) << "the end-of-generation id is not output";
  }
}

TEST(EngineConstraint, LengthMayCutTheLanguageShort) {
  const Outcome run = generate({grammar::ConstraintSpec::Kind::regex, "(ab|c)+x"}, 2, {}, 3);
  for (const auto& [c, why] : run.finish) {
    const std::string t = text_of(run.tokens.at(c));
    EXPECT_TRUE(why == FinishReason::stop || why == FinishReason::length) << run.error.at(c);
    EXPECT_EQ(t.find_first_not_of("abcx"), std::string::npos) << t;
    if (why == FinishReason::length) {
      EXPECT_EQ(run.tokens.at(c).size(), 3u);
    } else {
      EXPECT_EQ(t.back(), 'x') << t;
    }
  }
}

TEST(EngineConstraint, LogprobsAreOfTheMaskedDistribution) {
  const Outcome run = generate({grammar::ConstraintSpec::Kind::regex, "ac(b|c)x"}, 1, 5);
  ASSERT_EQ(run.finish.at(0), FinishReason::stop) << run.error.at(0);
  ASSERT_EQ(run.logprobs.size(), 4u);
  EXPECT_EQ(run.logprobs[0].logprob, 0.0f) << "'a' is the only token allowed first";
  ASSERT_EQ(run.logprobs[0].top.size(), 1u) << "forbidden tokens are not listed";
  for (const auto& lp : run.logprobs)
    for (const auto& t : lp.top) EXPECT_TRUE(std::isfinite(t.logprob));
}

TEST(EngineConstraint, AnEmptyMaskEndsTheRequestWithAnError) {
  const Outcome run = generate({grammar::ConstraintSpec::Kind::regex, "ay"}, 2);
  for (const auto& [c, why] : run.finish) {
    EXPECT_EQ(why, FinishReason::error);
    EXPECT_NE(run.error.at(c).find("allows no token"), std::string::npos) << run.error.at(c);
  }
}

TEST(EngineConstraint, AGrammarThatCannotStartFailsValidation) {
  // Lazily built tables (no precompute): only the start state can tell, and
  // validate() builds it on the caller's thread, never add() on the engine's.
  grammar::GrammarCache cache(4, {}, /*precompute_threads=*/0);
  EngineConfig cfg;
  EngineCore core(cfg, std::make_unique<testing::FakeRunner>(kVocab, 16, 4, 256), 16, nullptr,
                  std::make_shared<ManualClock>(), {2});
  Request r;
  r.prompt = {1, 3, 0};
  r.constraint = cache.tables({grammar::ConstraintSpec::Kind::regex, "((a?){150}){150}b", true, false}, toy_vocab());
  EXPECT_THROW(core.validate(r), InvalidArgument);
  r.constraint = cache.tables({grammar::ConstraintSpec::Kind::regex, "((a?){5}){5}b", true, false}, toy_vocab());
  EXPECT_NO_THROW(core.validate(r));
}

TEST(EngineConstraint, MasksOnAPoolEqualMasksInline) {
  auto tables = grammar::GrammarCache().tables({grammar::ConstraintSpec::Kind::regex, "(ab|c|bc)+x?"}, toy_vocab());
  std::vector<SeqConstraint> a, b;
  for (int i = 0; i < 16; ++i) {
    a.emplace_back(tables);
    for (int k = 0; k < i % 5; ++k) ASSERT_TRUE(a.back().matcher.accept(k % 2 ? 3 : 4));
  }
  b = a;
  std::vector<SeqConstraint*> pa, pb;
  for (auto& c : a) pa.push_back(&c);
  for (auto& c : b) pb.push_back(&c);
  ThreadPool pool(3);
  fill_masks(pa, &pool);
  fill_masks(pb, nullptr);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].mask, b[i].mask) << i;
    EXPECT_NE(a[i].mask, std::vector<uint32_t>(a[i].mask.size(), 0u)) << i;
  }
}

TEST(EngineConstraint, ALazyConstraintStartsAfterItsTrigger) {
  // "x" is favoured everywhere: free, the model writes it at once (the
  // trigger); then the grammar, which has no "x", decides the rest.
  const Outcome run =
      generate({grammar::ConstraintSpec::Kind::choice, R"(["abc", "q"])"}, 2, {}, 20, "x", {{5, 30.0f}});
  for (const auto& [c, why] : run.finish) {
    EXPECT_EQ(why, FinishReason::stop) << run.error.at(c);
    const std::string t = text_of(run.tokens.at(c));
    EXPECT_TRUE(t == "xabc" || t == "xq") << t;
  }
  // A trigger that never comes: the output is free to the end.
  const Outcome free = generate({grammar::ConstraintSpec::Kind::choice, R"(["q"])"}, 1, {}, 6, "zz", {{5, 30.0f}});
  EXPECT_EQ(free.finish.at(0), FinishReason::length) << free.error.at(0);
  EXPECT_EQ(text_of(free.tokens.at(0)), "xxxxxx");
}

TEST(EngineConstraint, AGatedConstraintWaitsOnlyWhenTheOutputOpens) {
  const grammar::ConstraintSpec spec{grammar::ConstraintSpec::Kind::choice, R"(["c", "q"])"};
  // "ab" (the gate, like "<think>") favoured: the output opens, then is free until "x".
  const Outcome opened = generate(spec, 1, {}, 5, "x", {{4, 30.0f}}, "ab");
  EXPECT_EQ(opened.finish.at(0), FinishReason::length) << opened.error.at(0);
  EXPECT_EQ(text_of(opened.tokens.at(0)), "ababababab");
  // "q" favoured: a token of the grammar's first, so the grammar holds from there.
  const Outcome answered = generate(spec, 1, {}, 5, "x", {{7, 30.0f}}, "ab");
  EXPECT_EQ(answered.finish.at(0), FinishReason::stop) << answered.error.at(0);
  EXPECT_EQ(text_of(answered.tokens.at(0)), "q");
  // "x" favoured but neither the grammar's nor an opening: never sampled first.
  const Outcome masked = generate(spec, 3, {}, 5, "x", {{5, 30.0f}}, "ab");
  for (const auto& [c, why] : masked.finish) {
    const std::string t = text_of(masked.tokens.at(c));
    EXPECT_TRUE(t == "c" || t == "q" || t.starts_with("a")) << t;
  }
}

TEST(EngineConstraint, ObserveFindsTheTriggerAcrossPiecesAndFeedsWhatFollows) {
  auto tables = grammar::GrammarCache().tables({grammar::ConstraintSpec::Kind::regex, "abc"}, toy_vocab());
  SeqConstraint c(tables, "</think>");
  EXPECT_FALSE(c.active());
  EXPECT_FALSE(c.finished());
  EXPECT_TRUE(c.observe("<think>think abc </th"));
  EXPECT_TRUE(c.observe("ink"));
  EXPECT_FALSE(c.active());
  EXPECT_TRUE(c.observe(">\n\na"));  // the trigger's end, whitespace dropped, then the grammar's first byte
  EXPECT_TRUE(c.active());
  EXPECT_TRUE(c.matcher.accept(6));  // "bc"
  EXPECT_TRUE(c.matcher.can_end());
  SeqConstraint d(tables, "</think>");
  EXPECT_FALSE(d.observe("</think>q"));  // the grammar refuses what follows
}

}  // namespace
}  // namespace pagoda
