// The flattened row records and their reference (the device kernels' spec)
// against the CPU path they stand for: the adjustments are adjust_logits'
// effect, the kept tokens and probabilities are Sampler's, greedy is its
// argmax, logprobs are logprobs.h's, and a draw picks only kept tokens, each
// as often as its probability says.
#include "sampling/row_sample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sampling/logit_adjust.h"
#include "sampling/logprobs.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace pagoda {
namespace {

constexpr float kRowInf = std::numeric_limits<float>::infinity();

std::vector<float> row_logits(size_t n, uint64_t seed, bool ties) {
  Rng rng(seed);
  std::vector<float> l(n);
  for (auto& x : l) x = float((rng.uniform() + rng.uniform() - 1.0) * 6.0);
  if (ties)  // coarse values: many equal logits, so the id order decides
    for (auto& x : l) x = std::round(x * 2.0f) / 2.0f;
  return l;
}

struct RowCase {
  SamplingParams params;
  TokenHistory history;
  int64_t n_generated = 0;
};

std::vector<RowCase> row_cases() {
  std::vector<RowCase> cases;
  auto add = [&](auto&& set) {
    RowCase c;
    c.history = TokenHistory(std::vector<int32_t>{3, 5, 5, 9}, std::vector<int32_t>{7, 7, 1, 3});
    c.n_generated = 4;
    set(c.params);
    cases.push_back(std::move(c));
  };
  add([](SamplingParams& p) { p.temperature = 0; });
  add([](SamplingParams& p) { p.temperature = 0.7f; });
  add([](SamplingParams& p) { p.top_k = 1; });
  add([](SamplingParams& p) { p.top_k = 5; });
  add([](SamplingParams& p) { p.top_k = 100000; });  // more than the vocabulary: off
  add([](SamplingParams& p) { p.top_p = 0.6f; });
  add([](SamplingParams& p) { p.min_p = 0.2f; });
  add([](SamplingParams& p) {
    p.temperature = 1.3f;
    p.top_k = 40;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
  });
  add([](SamplingParams& p) {
    p.repetition_penalty = 1.3f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = -0.4f;
    p.top_p = 0.95f;
  });
  add([](SamplingParams& p) {
    p.temperature = 0;
    p.repetition_penalty = 1.8f;
  });
  add([](SamplingParams& p) {
    p.logit_bias = {{4, 5.0f}, {6, -100.0f}, {4, 1.5f}};  // a repeated key adds twice, as adjust_logits does
    p.min_tokens = 10;                                    // masks the end-of-generation ids and stop ids
    p.stop_token_ids = {8};
    p.logprobs = 5;
  });
  add([](SamplingParams& p) {
    p.temperature = 0;
    p.min_tokens = 10;
    p.ignore_eos = true;  // only the stop ids masked
    p.stop_token_ids = {8, 0};
    p.logprobs = 20;
  });
  return cases;
}

const std::vector<int32_t> kRowEog = {2, 0};

struct Flat {
  RowSampling row;
  std::vector<LogitAdjust> adjusts;
  std::vector<PenaltyEntry> penalties;
  std::vector<float> distribution(std::span<const float> l) const {
    return row_distribution_reference(l, row, adjusts, penalties);
  }
  SampledRow sample(std::span<const float> l, double u) const {
    RowSampling r = row;
    r.uniform = u;
    return sample_row_reference(l, r, adjusts, penalties);
  }
};

Flat flat(const RowCase& c, double u = 0) {
  Flat f;
  f.adjusts.push_back({0, 1.0f});  // another row's entries before this one's
  f.penalties.push_back({1, 1});
  f.row = flatten_row(c.params, u, kRowEog, c.n_generated, c.history, f.adjusts, f.penalties);
  f.adjusts.erase(f.adjusts.begin(), f.adjusts.begin() + f.row.adjust_begin);
  f.penalties.erase(f.penalties.begin(), f.penalties.begin() + f.row.penalty_begin);
  EXPECT_EQ(f.row.adjust_count, int32_t(f.adjusts.size()));
  EXPECT_EQ(f.row.penalty_count, int32_t(f.penalties.size()));
  return f;
}

// What the engine's CPU path samples from: adjust_logits, then the sampler's steps 1-5.
std::vector<float> cpu_logits(std::span<const float> logits, const RowCase& c) {
  std::vector<float> a(logits.begin(), logits.end());
  adjust_logits(a, c.params, kRowEog, c.n_generated);
  return a;
}

TEST(RowSample, TheAdjustmentsAreAdjustLogitsEffect) {
  for (const RowCase& c : row_cases()) {
    const std::vector<float> l = row_logits(64, 1, false);
    const Flat f = flat(c);
    std::vector<float> mine = l;
    for (const auto& a : f.adjusts) mine[size_t(a.token)] += a.add;
    const std::vector<float> want = cpu_logits(l, c);
    for (size_t i = 0; i < l.size(); ++i) {  // a repeated bias key is summed first: an ulp apart at most
      if (std::isinf(want[i])) {
        EXPECT_EQ(mine[i], want[i]);
      } else {
        EXPECT_NEAR(mine[i], want[i], 1e-5f);
      }
    }
    EXPECT_EQ(f.penalties.empty(), !c.params.has_penalties());
  }
}

TEST(RowSample, KeepsTheSamplersTokensWithItsProbabilities) {
  for (const bool ties : {false, true})
    for (const size_t V : {size_t(12), size_t(300), size_t(5000)})
      for (const RowCase& c : row_cases()) {
        const std::vector<float> l = row_logits(V, V + ties, ties);
        const std::vector<float> want = filtered_distribution(cpu_logits(l, c), c.params, c.history);
        const std::vector<float> got = flat(c).distribution(l);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < V; ++i)
          ASSERT_NEAR(got[i], want[i], 1e-6f) << "token " << i << " of " << V << ", ties " << ties;
      }
}

TEST(RowSample, GreedyIsTheSamplersArgmaxAndLogprobsAreTheCpuPaths) {
  for (const RowCase& c : row_cases()) {
    const std::vector<float> l = row_logits(500, 3, true);
    const std::vector<float> a = cpu_logits(l, c);
    const SampledRow r = flat(c).sample(l, 0.5);
    ASSERT_EQ(r.status, SampledRow::kSampled);
    if (c.params.greedy()) {
      Rng unused(1);
      EXPECT_EQ(r.token, Sampler().sample(a, c.params, c.history, unused));
    }
    if (!c.params.logprobs) continue;
    EXPECT_EQ(r.logprob, token_logprob(a, r.token));
    std::vector<TokenLogprob> top = top_logprobs(a, *c.params.logprobs);
    std::erase_if(top, [](const TokenLogprob& t) { return std::isinf(t.logprob); });
    ASSERT_EQ(r.n_top, int32_t(top.size()));
    for (int32_t i = 0; i < r.n_top; ++i) {
      EXPECT_EQ(r.top[i].token, top[size_t(i)].token);
      EXPECT_EQ(r.top[i].logprob, top[size_t(i)].logprob);
    }
  }
}

TEST(RowSample, DrawsEachKeptTokenAsOftenAsItsProbabilityAndNoOther) {
  for (const RowCase& c : row_cases()) {
    if (c.params.greedy()) continue;
    const std::vector<float> l = row_logits(40, 9, false);
    const Flat f = flat(c);
    const std::vector<float> p = f.distribution(l);
    // Evenly spaced draws: each token gets about p * n of them.
    const int n = 20000;
    std::vector<int> count(l.size(), 0);
    for (int i = 0; i < n; ++i) ++count[size_t(f.sample(l, (i + 0.5) / n).token)];
    for (size_t t = 0; t < l.size(); ++t) {
      if (p[t] == 0.0f) {
        EXPECT_EQ(count[t], 0) << "token " << t << " is not kept";
      }
      EXPECT_NEAR(double(count[t]) / n, p[t], 1.5 / n) << "token " << t;
    }
  }
}

TEST(RowSample, ANonFiniteLogitOrEveryTokenMaskedIsTheRowsStatus) {
  RowCase c = row_cases()[1];
  std::vector<float> l = row_logits(16, 4, false);
  l[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(flat(c).sample(l, 0.3).status, SampledRow::kNonFinite);
  l[3] = kRowInf;
  EXPECT_EQ(flat(c).sample(l, 0.3).status, SampledRow::kNonFinite);
  // Every token masked (no API request can ask this: the reference must still answer).
  Flat f = flat(row_cases()[1]);
  ASSERT_TRUE(f.adjusts.empty());
  for (int32_t t = 0; t < 16; ++t) f.adjusts.push_back({t, -kRowInf});
  f.row.adjust_count = 16;
  const std::vector<float> finite = row_logits(16, 4, false);
  for (const float temperature : {0.0f, 1.0f}) {
    f.row.temperature = temperature;
    EXPECT_EQ(f.sample(finite, 0.3).status, SampledRow::kAllMasked);
  }
}

}  // namespace
}  // namespace pagoda
