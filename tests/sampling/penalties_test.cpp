// TokenHistory bookkeeping and the exact numbers the penalties produce.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "sampling/history.h"
#include "sampling/params.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace pagoda {
namespace {

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 1.5f, -2.0f, -0.5f};
const std::vector<int32_t> kPrompt = {3, 4, 3};
const std::vector<int32_t> kOutput = {1, 1, 7};

std::vector<float> penalized(const SamplingParams& p, const TokenHistory& h) {
  std::vector<float> l = kLogits;
  apply_penalties(l, p, h);
  return l;
}

void expect_logits(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

TEST(TokenHistory, CountsPromptAndOutputSeparately) {
  TokenHistory h(kPrompt, kOutput);
  EXPECT_TRUE(h.in_prompt(3));
  EXPECT_TRUE(h.in_prompt(4));
  EXPECT_FALSE(h.in_prompt(1));
  EXPECT_EQ(h.output_count(1), 2);
  EXPECT_EQ(h.output_count(7), 1);
  EXPECT_EQ(h.output_count(3), 0);
  EXPECT_EQ(h.output_count(99), 0);
  EXPECT_EQ(h.output_length(), 3);
  ASSERT_EQ(h.entries().size(), 4u);  // distinct tokens 3, 4, 1, 7 in order of first appearance
  EXPECT_EQ(h.entries()[0].token, 3);
  EXPECT_EQ(h.entries()[2].token, 1);
  EXPECT_EQ(h.entries()[2].output_count, 2);
  h.add_output(3);
  EXPECT_EQ(h.output_count(3), 1);
  EXPECT_TRUE(h.in_prompt(3));
  EXPECT_EQ(h.entries().size(), 4u);
  EXPECT_THROW(h.add_output(-1), InvalidArgument);
  EXPECT_THROW(h.add_prompt(std::vector<int32_t>{5, -3}), InvalidArgument);
}

TEST(Penalties, OffLeavesLogitsAlone) {
  expect_logits(penalized(SamplingParams{}, TokenHistory(kPrompt, kOutput)),
                {0.5, 2.0, -1.0, 1.0, 0.0, 1.5, -2.0, -0.5});
}

TEST(Penalties, RepetitionDividesPositiveMultipliesNegativeOverPromptAndOutput) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  // Tokens 1 (2.0, output), 3 (1.0, prompt), 4 (0.0, prompt), 7 (-0.5, output).
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)),
                {0.5, 2.0 / 1.3, -1.0, 1.0 / 1.3, 0.0, 1.5, -2.0, -0.5 * 1.3});
  p.repetition_penalty = 0.5f;  // < 1 encourages repeats
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)), {0.5, 4.0, -1.0, 2.0, 0.0, 1.5, -2.0, -0.25});
}

TEST(Penalties, FrequencyScalesWithOutputCountOnly) {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  // Token 1 was generated twice, token 7 once; prompt tokens are untouched.
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)), {0.5, 1.0, -1.0, 1.0, 0.0, 1.5, -2.0, -1.0});
  p.frequency_penalty = -2.0f;
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)), {0.5, 6.0, -1.0, 1.0, 0.0, 1.5, -2.0, 1.5});
}

TEST(Penalties, PresenceIsOncePerGeneratedToken) {
  SamplingParams p;
  p.presence_penalty = 0.3f;
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)), {0.5, 1.7, -1.0, 1.0, 0.0, 1.5, -2.0, -0.8});
}

TEST(Penalties, AllThreeInOrderRepetitionThenFrequencyThenPresence) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.3f;
  expect_logits(penalized(p, TokenHistory(kPrompt, kOutput)),
                {0.5, 2.0 / 1.3 - 2 * 0.5 - 0.3, -1.0, 1.0 / 1.3, 0.0, 1.5, -2.0, -0.5 * 1.3 - 0.5 - 0.3});
}

TEST(Penalties, TokenInPromptAndOutputIsPenalizedOnce) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  TokenHistory h(std::vector<int32_t>{1, 1, 1}, std::vector<int32_t>{1});
  expect_logits(penalized(p, h), {0.5, 2.0 / 2 - 0.25, -1.0, 1.0, 0.0, 1.5, -2.0, -0.5});
}

TEST(Penalties, MaskedTokensStayMaskedAndHugeValuesStayFinite) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  SamplingParams p;
  p.repetition_penalty = 1e-30f;  // pushes a positive logit past FLT_MAX
  p.frequency_penalty = -2.0f;
  std::vector<float> l = {-kInf, 1e10f};
  apply_penalties(l, p, TokenHistory({}, std::vector<int32_t>{0, 1}));
  EXPECT_EQ(l[0], -kInf);
  EXPECT_EQ(l[1], std::numeric_limits<float>::max());
}

TEST(Penalties, HistoryTokenOutsideVocabulary) {
  SamplingParams p;
  p.presence_penalty = 1;
  std::vector<float> l = kLogits;
  EXPECT_THROW(apply_penalties(l, p, TokenHistory(std::vector<int32_t>{8})), InvalidArgument);
  Sampler s;
  Rng rng(1);
  EXPECT_THROW(s.sample(kLogits, p, TokenHistory(std::vector<int32_t>{8}), rng), InvalidArgument);
  p.presence_penalty = 0;  // no penalty: the history is not consulted
  EXPECT_NO_THROW(s.sample(kLogits, p, TokenHistory(std::vector<int32_t>{8}), rng));
}

}  // namespace
}  // namespace pagoda
