#include "tools/loadgen_stats.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "util/error.h"

namespace pagoda::tools {

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.count = int64_t(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  // numpy's "linear": rank q * (n - 1), interpolated between its neighbours.
  auto at = [&](double q) {
    const double rank = q * double(v.size() - 1);
    const size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - double(lo));
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  p.mean = sum / double(v.size());
  for (double x : v) sq += (x - p.mean) * (x - p.mean);
  p.stddev = std::sqrt(sq / double(v.size()));  // population, as numpy's std
  return p;
}

double parse_request_rate(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(r) || r <= 0)
    fail<InvalidArgument>("--request-rate must be 'inf' or a number of requests per second > 0, got '{}'", s);
  return r;
}

double PoissonArrivals::next() {
  if (first_) {
    first_ = false;
    return t_;
  }
  if (std::isinf(rate_)) return t_;
  t_ += std::exponential_distribution<double>(rate_)(rng_);
  return t_;
}

int TokenRange::draw(std::mt19937_64& rng) const { return std::uniform_int_distribution<int>(lo, hi)(rng); }

TokenRange parse_token_range(const std::string& s, const std::string& flag) {
  auto number = [&](const std::string& part) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || end != part.c_str() + part.size() || errno != 0 || v < 1 || v > 1'000'000)
      fail<InvalidArgument>("{} must be A:B or N with 1 <= A <= B <= 1000000, got '{}'", flag, s);
    return int(v);
  };
  const size_t colon = s.find(':');
  TokenRange r;
  r.lo = number(s.substr(0, colon));
  r.hi = colon == std::string::npos ? r.lo : number(s.substr(colon + 1));
  if (r.lo > r.hi) fail<InvalidArgument>("{} must be A:B with A <= B, got '{}'", flag, s);
  return r;
}

std::string word_prompt(int words, std::mt19937_64& rng) {
  static const char* const kWords[] = {"the",  "and",  "a",    "to",   "of",   "in",     "was",    "he",
                                       "she",  "it",   "day",  "sun",  "dog",  "cat",    "big",    "red",
                                       "tree", "park", "ball", "play", "went", "saw",    "said",   "time",
                                       "home", "mom",  "girl", "boy",  "bird", "happy",  "good",   "little",
                                       "one",  "with", "they", "had",  "very", "wanted", "friend", "look"};
  constexpr size_t n = sizeof kWords / sizeof kWords[0];
  std::string s;
  for (int i = 0; i < words; ++i) {
    if (i > 0) s += ' ';
    s += kWords[rng() % n];
  }
  return s;
}

PromptFit PromptFit::from_probes(int w1, int64_t t1, int w2, int64_t t2) {
  PromptFit f;
  if (w2 == w1 || t1 <= 0 || t2 <= t1) return f;
  f.per_word = double(t2 - t1) / double(w2 - w1);
  f.base = double(t1) - f.per_word * double(w1);
  return f;
}

int PromptFit::words_for(int tokens) const { return std::max(1, int(std::lround((double(tokens) - base) / per_word))); }

double tpot_ms(const RequestTiming& t) {
  return t.output_tokens > 1 ? (t.e2e_ms - t.ttft_ms) / double(t.output_tokens - 1) : 0;
}

bool meets(const RequestTiming& t, const Slo& slo) {
  if (slo.ttft_ms > 0 && t.ttft_ms > slo.ttft_ms) return false;
  if (slo.itl_ms > 0 && t.max_itl_ms > slo.itl_ms) return false;
  if (slo.tpot_ms > 0 && tpot_ms(t) > slo.tpot_ms) return false;
  return true;
}

int64_t count_good(const std::vector<RequestTiming>& timings, const Slo& slo) {
  return std::count_if(timings.begin(), timings.end(), [&](const RequestTiming& t) { return meets(t, slo); });
}

}  // namespace pagoda::tools
