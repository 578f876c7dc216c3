// Sampler behaviour beyond the distributions: greedy, seeds, preemption,
// masks, bad input, tie order, and a 150k vocabulary against a plain
// full-sort reference (which exercises the growing partial sort of top-p).
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 1.5f, -2.0f, -0.5f};

// Roughly normal logits with standard deviation `scale`, reproducibly.
std::vector<float> random_logits(size_t n, float scale, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> l(n);
  for (auto& x : l) x = float((rng.uniform() + rng.uniform() + rng.uniform() - 1.5) * 2.0 * scale);
  return l;
}

std::vector<int32_t> generate(Sampler& s, const std::vector<float>& logits, const SamplingParams& p, TokenHistory& h,
                              Rng& rng, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(s.sample(logits, p, h, rng));
    h.add_output(out.back());
  }
  return out;
}

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s;
  Rng rng(1);
  EXPECT_EQ(s.sample(kLogits, p, {}, rng), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 3, 0}, p, {}, rng), 1);
  EXPECT_EQ(s.sample(std::vector<float>{-kInf, -5, -kInf}, p, {}, rng), 1);
  EXPECT_EQ(rng, Rng(1)) << "greedy must not consume randomness";
  // The filters cannot change the argmax.
  p.top_k = 2;
  p.top_p = 0.1f;
  p.min_p = 0.9f;
  EXPECT_EQ(s.sample(kLogits, p, {}, rng), 1);
  const std::vector<float> d = s.filtered_distribution(kLogits, p, {});
  EXPECT_EQ(d, (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(Sampler, GreedyAppliesPenaltiesFirst) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 2;  // token 1: 2.0 - 2 * 2 = -2, so token 5 (1.5) wins
  Sampler s;
  Rng rng(1);
  EXPECT_EQ(s.sample(kLogits, p, TokenHistory({}, std::vector<int32_t>{1, 1}), rng), 5);
}

TEST(Sampler, TinyTemperatureIsArgmaxSplittingTies) {
  SamplingParams p;
  for (float t : {1e-6f, 1e-30f, 1e-45f /* subnormal: 1 / t overflows */}) {
    p.temperature = t;
    EXPECT_EQ(filtered_distribution(kLogits, p, {}), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0})) << t;
    EXPECT_EQ(filtered_distribution(std::vector<float>{1, 3, 3, 0}, p, {}), (std::vector<float>{0, 0.5f, 0.5f, 0}))
        << t;
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const auto logits = random_logits(1000, 1.0f, 5);
  SamplingParams p;
  p.temperature = 1.2f;
  p.top_p = 0.95f;
  p.presence_penalty = 0.5f;
  auto run = [&](uint64_t seed) {
    Sampler s;
    Rng rng(seed);
    TokenHistory h(std::vector<int32_t>{1, 2, 3});
    return generate(s, logits, p, h, rng, 200);
  };
  const auto a = run(42);
  EXPECT_EQ(a, run(42));
  EXPECT_NE(a, run(43));
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 50u) << "draws should spread";
}

TEST(Sampler, PreemptedAndResumedRequestGivesTheSameTokens) {
  const auto logits = random_logits(500, 1.0f, 9);
  SamplingParams p;
  p.top_k = 100;
  p.frequency_penalty = 0.3f;
  Sampler s;
  Rng rng(7);
  TokenHistory h;
  const auto head = generate(s, logits, p, h, rng, 20);
  // Preempt: the engine keeps copies of the request's Rng and history.
  Rng saved_rng = rng;
  TokenHistory saved_history = h;
  const auto tail = generate(s, logits, p, h, rng, 30);
  Sampler other;  // resumed elsewhere, with another sampler's scratch
  EXPECT_EQ(generate(other, logits, p, saved_history, saved_rng, 30), tail);
  // And the whole run equals an uninterrupted one.
  Rng fresh(7);
  TokenHistory fresh_history;
  auto full = head;
  full.insert(full.end(), tail.begin(), tail.end());
  EXPECT_EQ(generate(other, logits, p, fresh_history, fresh, 50), full);
}

TEST(Sampler, MaskedTokensAreNeverDrawn) {
  std::vector<float> logits(16, 0.0f);
  for (int i = 0; i < 16; i += 2) logits[i] = -kInf;
  SamplingParams p;
  p.temperature = 2;
  Sampler s;
  Rng rng(3);
  std::vector<int> counts(16);
  for (int i = 0; i < 4000; ++i) counts[s.sample(logits, p, {}, rng)]++;
  for (int i = 0; i < 16; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(counts[i], 0);
    } else {
      EXPECT_GT(counts[i], 300);
    }
  }
}

TEST(Sampler, BadInputThrows) {
  Sampler s;
  Rng rng(1);
  SamplingParams p;
  EXPECT_THROW(s.sample({}, p, {}, rng), InvalidArgument);
  EXPECT_THROW(s.sample(std::vector<float>{-kInf, -kInf}, p, {}, rng), Error);
  EXPECT_THROW(s.sample(std::vector<float>{0, std::nanf("")}, p, {}, rng), Error);
  EXPECT_THROW(s.sample(std::vector<float>{0, kInf}, p, {}, rng), Error);
  p.top_p = 0;
  EXPECT_THROW(s.sample(kLogits, p, {}, rng), InvalidArgument);
  EXPECT_THROW(s.filtered_distribution(kLogits, p, {}), InvalidArgument);
}

TEST(Sampler, TopKTiesKeepLowerIds) {
  SamplingParams p;
  p.top_k = 3;
  const auto d = filtered_distribution(std::vector<float>(10, 0.5f), p, {});
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(d[i], i < 3 ? 1.0f / 3 : 0.0f) << i;
  p.top_k = 20;  // larger than the vocabulary: keeps all
  const auto all = filtered_distribution(std::vector<float>(10, 0.5f), p, {});
  for (float x : all) EXPECT_FLOAT_EQ(x, 0.1f);
}

TEST(Sampler, MinPOneKeepsTheTiedTop) {
  SamplingParams p;
  p.min_p = 1;
  const auto d = filtered_distribution(std::vector<float>{1, 3, 0, 3}, p, {});
  EXPECT_EQ(d, (std::vector<float>{0, 0.5f, 0, 0.5f}));
}

// The filters written the obvious way: full sort, double softmax, cumulative sums.
std::vector<double> reference(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  if (p.top_k > 0 && size_t(p.top_k) < order.size()) order.resize(p.top_k);
  const double t = p.temperature, top = logits[order[0]];
  std::vector<double> w;
  for (int i : order) w.push_back(std::exp((logits[i] - top) / t));
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  size_t keep = order.size();
  if (p.top_p < 1) {
    double cum = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      cum += w[i] / total;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  size_t keep_min_p = 0;
  while (keep_min_p < keep && w[keep_min_p] >= p.min_p) keep_min_p++;
  keep = keep_min_p;
  total = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  std::vector<double> probs(logits.size(), 0.0);
  for (size_t i = 0; i < keep; ++i) probs[order[i]] = w[i] / total;
  return probs;
}

TEST(Sampler, LargeVocabularyMatchesAFullSortReference) {
  struct Case {
    float temperature;
    int top_k;
    float top_p, min_p;
  };
  // Peaked, as real models mostly are: top-p keeps a handful of tokens.
  auto peaked = random_logits(150000, 2.0f, 12);
  for (int i = 0; i < 6; ++i) peaked[1000 + 7919 * i] = 14.0f - float(i);
  for (const Case c : {Case{1.0f, 0, 0.9f, 0.0f}, Case{0.5f, 0, 0.99f, 0.0f}, Case{1.0f, 0, 0.3f, 0.01f}}) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    const auto got = filtered_distribution(peaked, p, {});
    const auto want = reference(peaked, p);
    for (size_t i = 0; i < peaked.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << "token " << i;
  }
  // Flat: the kept set is tens of thousands of tokens.
  const auto logits = random_logits(150000, 2.0f, 11);
  for (const Case c : {Case{1.0f, 0, 0.9f, 0.0f}, Case{2.0f, 0, 0.95f, 0.0f}, Case{0.7f, 0, 0.5f, 0.0f},
                       Case{1.0f, 40, 0.9f, 0.05f}, Case{1.5f, 0, 1.0f, 0.2f}, Case{1.0f, 1000, 1.0f, 0.0f}}) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    const auto got = filtered_distribution(logits, p, {});
    const auto want = reference(logits, p);
    size_t support_got = 0, support_want = 0;
    double max_diff = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      support_got += got[i] > 0;
      support_want += want[i] > 0;
      max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    }
    EXPECT_EQ(support_got, support_want) << "T=" << c.temperature << " top_p=" << c.top_p;
    EXPECT_LT(max_diff, 1e-6) << "T=" << c.temperature << " top_p=" << c.top_p;
  }
}

}  // namespace
}  // namespace pagoda
