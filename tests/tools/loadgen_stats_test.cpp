// The arithmetic behind `pagoda loadgen`'s report: the Poisson schedule, the
// ranges and prompts, percentiles, TPOT and goodput.
#include "tools/loadgen_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "util/error.h"

namespace pagoda::tools {
namespace {

std::vector<double> arrivals(double rate, uint64_t seed, int n) {
  PoissonArrivals a(rate, seed);
  std::vector<double> t;
  for (int i = 0; i < n; ++i) t.push_back(a.next());
  return t;
}

TEST(LoadgenPoisson, MeanRateAndSpreadOfAnExponentialForASeed) {
  const int n = 20000;
  const auto t = arrivals(5.0, 7, n);
  EXPECT_EQ(t[0], 0);
  std::vector<double> gaps;
  for (int i = 1; i < n; ++i) {
    ASSERT_GE(t[i], t[i - 1]);
    gaps.push_back(t[i] - t[i - 1]);
  }
  // Mean gap 1/rate: its standard error here is 0.7%, the bound 3%.
  const Percentiles p = percentiles(gaps);
  EXPECT_NEAR(p.mean, 0.2, 0.2 * 0.03);
  EXPECT_NEAR(double(n - 1) / t.back(), 5.0, 5.0 * 0.03);
  // An exponential's standard deviation equals its mean, its median is ln 2 of it.
  EXPECT_NEAR(p.stddev / p.mean, 1.0, 0.05);
  EXPECT_NEAR(p.p50 / p.mean, std::log(2.0), 0.04);
}

TEST(LoadgenPoisson, DeterministicPerSeed) {
  EXPECT_EQ(arrivals(3.0, 11, 500), arrivals(3.0, 11, 500));
  EXPECT_NE(arrivals(3.0, 11, 500), arrivals(3.0, 12, 500));
}

TEST(LoadgenPoisson, InfiniteRateSendsEverythingAtOnce) {
  for (double x : arrivals(INFINITY, 1, 10)) EXPECT_EQ(x, 0);
}

TEST(LoadgenRate, ParsesInfOrAPositiveNumber) {
  EXPECT_TRUE(std::isinf(parse_request_rate("inf")));
  EXPECT_DOUBLE_EQ(parse_request_rate("2.5"), 2.5);
  for (const char* bad : {"0", "-1", "abc", "", "1x", "nan", "1e999", "-inf"})
    EXPECT_THROW(parse_request_rate(bad), InvalidArgument) << bad;
}

TEST(LoadgenRanges, ParseAndDrawWithinBounds) {
  const TokenRange r = parse_token_range("100:160", "--prompt-tokens");
  EXPECT_EQ(r.lo, 100);
  EXPECT_EQ(r.hi, 160);
  const TokenRange one = parse_token_range("64", "--output-tokens");
  EXPECT_EQ(one.lo, 64);
  EXPECT_EQ(one.hi, 64);
  EXPECT_TRUE(TokenRange{}.empty());
  for (const char* bad : {"0:5", "5:3", "a:b", "1:", ":3", "", "-2:4", "1:2000000", "3:4:5"})
    EXPECT_THROW(parse_token_range(bad, "--prompt-tokens"), InvalidArgument) << bad;
  std::mt19937_64 rng(3);
  const TokenRange small{2, 4};
  int seen[5] = {};
  for (int i = 0; i < 300; ++i) {
    const int x = small.draw(rng);
    ASSERT_GE(x, 2);
    ASSERT_LE(x, 4);
    ++seen[x];
  }
  EXPECT_GT(seen[2], 0);
  EXPECT_GT(seen[4], 0);
}

TEST(LoadgenPrompts, WordsAndTheFitFromTwoProbes) {
  std::mt19937_64 a(5), b(5);
  const std::string p = word_prompt(37, a);
  EXPECT_EQ(p, word_prompt(37, b));
  EXPECT_EQ(std::count(p.begin(), p.end(), ' '), 36);
  // 16 words -> 20 tokens, 80 -> 84: 1 token a word and 4 of template.
  const PromptFit f = PromptFit::from_probes(16, 20, 80, 84);
  EXPECT_DOUBLE_EQ(f.per_word, 1.0);
  EXPECT_DOUBLE_EQ(f.base, 4.0);
  EXPECT_EQ(f.words_for(104), 100);
  EXPECT_EQ(f.words_for(2), 1);  // never an empty prompt
  // A tiny vocabulary: 2.5 tokens a word.
  EXPECT_EQ(PromptFit::from_probes(16, 41, 80, 201).words_for(101), 40);
  // Probes that make no sense: one token a word.
  for (const PromptFit& bad : {PromptFit::from_probes(16, -1, 80, 84), PromptFit::from_probes(16, 50, 80, 40)}) {
    EXPECT_EQ(bad.per_word, 1.0);
    EXPECT_EQ(bad.words_for(50), 49);
  }
}

TEST(LoadgenPercentiles, LinearBetweenClosestRanksAsNumpy) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const Percentiles p = percentiles(v);
  EXPECT_EQ(p.count, 100);
  EXPECT_DOUBLE_EQ(p.p50, 50.5);  // numpy.percentile(range(1, 101), 50)
  EXPECT_NEAR(p.p90, 90.1, 1e-9);
  EXPECT_NEAR(p.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
  EXPECT_NEAR(p.stddev, std::sqrt((100.0 * 100.0 - 1) / 12), 1e-9);
  const Percentiles one = percentiles({7});
  EXPECT_EQ(one.p50, 7);
  EXPECT_EQ(one.p99, 7);
  EXPECT_EQ(one.stddev, 0);
  EXPECT_EQ(percentiles({}).count, 0);
}

TEST(LoadgenGoodput, EverySloMustHold) {
  // TPOT: (E2E - TTFT) / (tokens - 1).
  const RequestTiming fast{100, 730, 20, 64}, stalled{100, 2000, 1500, 64}, late{900, 1500, 15, 64}, one{50, 50, 0, 1};
  EXPECT_DOUBLE_EQ(tpot_ms(fast), 10.0);
  EXPECT_EQ(tpot_ms(one), 0);
  const std::vector<RequestTiming> all = {fast, stalled, late, one};
  EXPECT_EQ(count_good(all, Slo{}), 4);  // no SLO: every completed request counts
  EXPECT_EQ(count_good(all, Slo{500, 0, 0}), 3);
  EXPECT_EQ(count_good(all, Slo{0, 100, 0}), 3);    // the stall breaks the ITL bound
  EXPECT_EQ(count_good(all, Slo{500, 100, 0}), 2);  // both
  EXPECT_EQ(count_good(all, Slo{0, 0, 12.0}), 3);   // stalled: TPOT 30 ms
  EXPECT_FALSE(meets(stalled, Slo{0, 0, 29.0}));
  EXPECT_TRUE(meets(fast, Slo{100, 20, 10}));  // bounds are inclusive
}

}  // namespace
}  // namespace pagoda::tools
