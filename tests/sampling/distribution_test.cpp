// Sampling matches the math: for each filter alone and for all of them
// together, the frequencies of 10,000 seeded draws on an 8-token vocabulary
// match a distribution worked out here by hand (max abs difference 0.02), and
// filtered_distribution() matches it to float precision.
//
// The hand side: which tokens survive is written out literally (from the
// numbers in the comments), and the only arithmetic is a plain softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/sampler.h"

namespace pagoda {
namespace {

// Logits by token id: sorted, the order is 1 (2.0), 5 (1.5), 3 (1.0), 0 (0.5),
// 4 (0.0), 7 (-0.5), 2 (-1.0), 6 (-2.0). Softmax probabilities in that order:
// .4027 .2443 .1482 .0899 .0545 .0331 .0201 .0074; cumulative .4027 .6470
// .7952 .8851 .9396 .9727 .9928 1. Probability / top probability:
// 1 .6065 .3679 .2231 .1353 .0821 .0498 .0183.
const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 1.5f, -2.0f, -0.5f};
const std::vector<int32_t> kPrompt = {3, 4, 3};
const std::vector<int32_t> kOutput = {1, 1, 7};
constexpr int kDraws = 10000;

// exp(logit / t) normalized over the `kept` tokens; zero for all others.
std::vector<double> softmax_over(const std::vector<double>& logits, double t, const std::vector<int>& kept) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0;
  for (int k : kept) sum += std::exp(logits[k] / t);
  for (int k : kept) p[k] = std::exp(logits[k] / t) / sum;
  return p;
}

std::vector<double> raw_logits() { return std::vector<double>(kLogits.begin(), kLogits.end()); }

void expect_distribution(const SamplingParams& params, const TokenHistory& history, const std::vector<double>& want,
                         uint64_t seed = 2024) {
  const std::vector<float> got = filtered_distribution(kLogits, params, history);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5) << "filtered_distribution, token " << i;
    if (want[i] == 0) {
      EXPECT_EQ(got[i], 0.0f) << "token " << i << " should be filtered out";
    }
  }

  Sampler sampler;
  Rng rng(seed);
  std::vector<int> counts(want.size(), 0);
  for (int i = 0; i < kDraws; ++i) counts[sampler.sample(kLogits, params, history, rng)]++;
  double max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double freq = double(counts[i]) / kDraws;
    max_diff = std::max(max_diff, std::abs(freq - want[i]));
    if (want[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "filtered token " << i << " was drawn";
    }
  }
  EXPECT_LE(max_diff, 0.02);
}

TEST(Distribution, PlainSoftmax) {
  expect_distribution(SamplingParams{}, {}, softmax_over(raw_logits(), 1.0, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Distribution, LowTemperatureSharpens) {
  SamplingParams p;
  p.temperature = 0.5f;
  expect_distribution(p, {}, softmax_over(raw_logits(), 0.5, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Distribution, HighTemperatureFlattens) {
  SamplingParams p;
  p.temperature = 1.5f;
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.5, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Distribution, TopK) {
  SamplingParams p;
  p.top_k = 3;  // tokens 1, 5, 3
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1, 5, 3}));
}

TEST(Distribution, TopP) {
  SamplingParams p;
  p.top_p = 0.85f;  // cumulative .7952 < .85 <= .8851: tokens 1, 5, 3, 0
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1, 5, 3, 0}));
}

TEST(Distribution, TopPIsOverWhatTopKLeft) {
  SamplingParams p;
  p.top_k = 3;
  // Renormalized over 1, 5, 3: .5064, cumulative .8136 >= .78: tokens 1, 5.
  // (Over the whole vocabulary it would have kept 3 as well: .7952 >= .78.)
  p.top_p = 0.78f;
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1, 5}));
}

TEST(Distribution, TopPAlwaysKeepsOne) {
  SamplingParams p;
  p.top_p = 1e-6f;
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1}));
}

TEST(Distribution, MinP) {
  SamplingParams p;
  p.min_p = 0.1f;  // ratios 1 .6065 .3679 .2231 .1353 >= .1 > .0821: tokens 1, 5, 3, 0, 4
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1, 5, 3, 0, 4}));
}

TEST(Distribution, MinPUsesTemperedProbabilities) {
  SamplingParams p;
  p.temperature = 0.5f;
  p.min_p = 0.1f;  // exp((l - 2) / .5) >= .1  <=>  l >= 2 + .5 ln .1 = .849: tokens 1, 5, 3
  expect_distribution(p, {}, softmax_over(raw_logits(), 0.5, {1, 5, 3}));
}

TEST(Distribution, TopPUsesTemperedProbabilities) {
  SamplingParams p;
  p.temperature = 0.5f;
  // At T = .5 the cumulative probabilities are .6325 .8653 .9509: top-p .9
  // keeps 1, 5, 3 (at T = 1 it would keep five tokens).
  p.top_p = 0.9f;
  expect_distribution(p, {}, softmax_over(raw_logits(), 0.5, {1, 5, 3}));
}

TEST(Distribution, MinPAfterTopP) {
  SamplingParams p;
  p.top_p = 0.85f;  // tokens 1, 5, 3, 0
  p.min_p = 0.2f;   // ratios down to .2231 (token 0) pass: still 1, 5, 3, 0
  // (Had min-p gone first, top-p over the renormalized four would keep three.)
  expect_distribution(p, {}, softmax_over(raw_logits(), 1.0, {1, 5, 3, 0}));
}

TEST(Distribution, RepetitionPenalty) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  std::vector<double> l = raw_logits();
  l[1] = 2.0 / 1.3;   // generated
  l[3] = 1.0 / 1.3;   // in the prompt
  l[4] = 0.0;         // in the prompt, unchanged at zero
  l[7] = -0.5 * 1.3;  // generated
  expect_distribution(p, TokenHistory(kPrompt, kOutput), softmax_over(l, 1.0, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Distribution, FrequencyAndPresencePenalties) {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.3f;
  std::vector<double> l = raw_logits();
  l[1] = 2.0 - 2 * 0.5 - 0.3;   // generated twice
  l[7] = -0.5 - 1 * 0.5 - 0.3;  // generated once
  expect_distribution(p, TokenHistory(kPrompt, kOutput), softmax_over(l, 1.0, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Distribution, AllFiltersCombined) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.3f;
  p.temperature = 0.8f;
  p.top_k = 5;
  p.top_p = 0.9f;
  p.min_p = 0.25f;
  // Penalized logits by id: .5, 2/1.3 - 1 - .3 = .2385, -1, 1/1.3 = .7692, 0,
  // 1.5, -2, -.65 - .5 - .3 = -1.45. Order: 5, 3, 0, 1, 4, 2, 7, 6.
  std::vector<double> l = {0.5, 2.0 / 1.3 - 1.0 - 0.3, -1.0, 1.0 / 1.3, 0.0, 1.5, -2.0, -0.5 * 1.3 - 0.5 - 0.3};
  // top-k 5: 5, 3, 0, 1, 4. At T = .8 their probabilities are .4884 .1959
  // .1399 .1009 .0749, cumulative .4884 .6843 .8242 .9251: top-p .9 keeps 5, 3,
  // 0, 1. Ratios to the top, exp((l - 1.5) / .8): 1 .4011 .2865 .2066: min-p
  // .25 drops 1.
  expect_distribution(p, TokenHistory(kPrompt, kOutput), softmax_over(l, 0.8, {5, 3, 0}));
}

}  // namespace
}  // namespace pagoda
