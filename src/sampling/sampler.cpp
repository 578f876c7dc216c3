// The sampling pipeline. For a vocabulary of V, without top-k: a SIMD pass
// for the largest logit, one computing V weights (Highway's vector exp: as
// scalar std::exp the exps dominated), one collecting candidates, then
// top-p in linear time (narrowed to the tokens above a power-of-two weight
// bucket, then bisection with nth_element), one pass for the draw. With top-k,
// one pass keeps the k best in a small heap and only k exps follow. Scratch
// buffers live in the Sampler, so a warm Sampler does not allocate.
#include "sampling/sampler.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>

#include "kernels/softmax.h"
#include "util/error.h"

namespace pagoda {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

float penalize(float logit, const TokenHistory::Entry& e, const SamplingParams& p) {
  if (p.repetition_penalty != 1.0f) logit = logit > 0.0f ? logit / p.repetition_penalty : logit * p.repetition_penalty;
  if (e.output_count > 0) logit -= p.frequency_penalty * float(e.output_count) + p.presence_penalty;
  // A tiny repetition penalty can overflow a positive logit; keep it finite
  // so the softmax stays defined. -inf (a masked token) stays masked.
  return std::min(logit, FLT_MAX);
}

// Only -inf (a mask) and finite logits are meaningful; NaN and +inf mean the model broke.
void check_logit(float l, size_t i) {
  if (!(l < kInf)) fail<Error>("logit of token {} is {}", i, l);
}

// The strict "more likely" order: higher logit, then lower id.
template <class C>
bool more_likely(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Greedy: the first strict maximum, so the lowest id on ties.
int32_t argmax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    check_logit(logits[i], i);
    if (logits[i] > logits[best]) best = i;
  }
  if (logits[best] == -kInf) fail<Error>("every logit is -inf: no token can be sampled");
  return int32_t(best);
}

// Top-p on unordered candidates: the size of the smallest most-likely prefix
// whose weight reaches `target`. Bisection: nth_element splits the range at
// its middle, the weight of the likelier half says which half holds the cut;
// expected linear time, and only the last few elements get sorted.
template <class C>
size_t top_p_cut(std::vector<C>& cand, double target) {
  size_t lo = 0, hi = cand.size();  // the cut is in (lo, hi]; cand[0, lo) are kept
  double kept = 0.0;                // weight of cand[0, lo)
  while (hi - lo > 32) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(cand.begin() + lo, cand.begin() + mid, cand.begin() + hi, more_likely<C>);
    double half = 0.0;
    for (size_t i = lo; i < mid; ++i) half += cand[i].weight;
    if (kept + half >= target) {
      hi = mid;
    } else {
      kept += half;
      lo = mid;
    }
  }
  std::sort(cand.begin() + lo, cand.begin() + hi, more_likely<C>);
  for (size_t i = lo; i < hi; ++i) {
    kept += cand[i].weight;
    if (kept >= target) return i + 1;
  }
  return hi;  // rounding left the sum a hair under target: keep the range
}

// Weights are in [0, 1]; bucket b holds those with binary exponent -b, i.e. in
// [2^-b, 2^-b+1), so lower buckets hold likelier tokens (zero and subnormals: 127).
size_t weight_bucket(float w) { return 127 - (std::bit_cast<uint32_t>(w) >> 23); }

}  // namespace

void apply_penalties(std::span<float> logits, const SamplingParams& params, const TokenHistory& history) {
  if (!params.has_penalties()) return;
  for (const auto& e : history.entries()) {
    if (size_t(e.token) >= logits.size())
      fail<InvalidArgument>("token id {} in the history is outside the vocabulary of {}", e.token, logits.size());
    logits[e.token] = penalize(logits[e.token], e, params);
  }
}

std::span<const float> Sampler::prepare(std::span<const float> logits, const SamplingParams& params,
                                        const TokenHistory& history) {
  params.validate();
  if (logits.empty()) fail<InvalidArgument>("sampling needs at least one logit");
  if (!params.has_penalties()) return logits;
  penalized_.assign(logits.begin(), logits.end());
  apply_penalties(penalized_, params, history);
  return penalized_;
}

// The k most likely tokens into cand_, in one pass: a heap whose front is the
// least likely kept so far, so most tokens cost one comparison.
void Sampler::select_top_k(std::span<const float> logits, size_t k) {
  cand_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    check_logit(logits[i], i);
    const Candidate c{logits[i], 0.0f, int32_t(i)};
    if (c.logit == -kInf) continue;
    if (cand_.size() < k) {
      cand_.push_back(c);
      std::push_heap(cand_.begin(), cand_.end(), more_likely<Candidate>);
    } else if (more_likely(c, cand_.front())) {
      std::pop_heap(cand_.begin(), cand_.end(), more_likely<Candidate>);
      cand_.back() = c;
      std::push_heap(cand_.begin(), cand_.end(), more_likely<Candidate>);
    }
  }
}

// Every token but the masked ones, with its weight exp((logit - max) / T):
// the two full-vocabulary passes in SIMD (kernels/softmax.h), then one
// scalar pass that keeps the candidates in id order.
void Sampler::collect_all(std::span<const float> logits, float temperature) {
  const LogitScan scan = scan_logits(logits.data(), logits.size());
  if (!scan.ok)
    for (size_t i = 0; i < logits.size(); ++i) check_logit(logits[i], i);  // throws, naming the first bad one
  if (scan.max == -kInf) fail<Error>("every logit is -inf: no token can be sampled");
  weights_.resize(logits.size());
  exp_weights(logits.data(), logits.size(), scan.max, temperature, weights_.data());
  cand_.resize(logits.size());
  size_t n = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    // The best token's weight is exactly 1, as the filters below assume.
    cand_[n] = {logits[i], logits[i] == scan.max ? 1.0f : weights_[i], int32_t(i)};
    n += logits[i] != -kInf;  // masked tokens are overwritten by the next one
  }
  cand_.resize(n);
}

double Sampler::filter(std::span<const float> logits, const SamplingParams& p) {
  // Temperature. Weights are relative to the best token, which every filter
  // keeps, so its weight is exactly 1 and nothing overflows, whatever T.
  // Top-k needs only the order of the logits, which temperature keeps: the
  // k weights follow; without it, collect_all computes all of them.
  const bool top_k = p.top_k > 0 && size_t(p.top_k) < logits.size();
  if (top_k) {
    select_top_k(logits, size_t(p.top_k));
    if (cand_.empty()) fail<Error>("every logit is -inf: no token can be sampled");
    float best = -kInf;
    for (const auto& c : cand_) best = std::max(best, c.logit);
    for (auto& c : cand_) c.weight = std::exp((c.logit - best) / p.temperature);  // a division: 1/T may overflow
  } else {
    collect_all(logits, p.temperature);
  }
  const bool top_p = p.top_p < 1.0f;
  std::array<double, 128> bucket_weight{};  // for top-p: weight per weight_bucket
  double total = 0.0;
  for (const auto& c : cand_) {
    total += c.weight;
    if (top_p) bucket_weight[weight_bucket(c.weight)] += c.weight;
  }
  const double top_p_target = double(p.top_p) * total;

  // Min-p before top-p here, though it is defined after: both keep a most-
  // likely prefix and the result is the shorter one, so dropping min-p's
  // tokens first and cutting top-p against the undropped total is the same,
  // and leaves top-p less to search.
  // prob >= min_p * max_prob  <=>  weight >= min_p, as the top weight is 1.
  if (p.min_p > 0.0f) std::erase_if(cand_, [&](const Candidate& c) { return c.weight < p.min_p; });

  if (top_p) {
    // The buckets up to the one where the weight reaches the target form a
    // prefix that holds the cut; search only those tokens.
    size_t last = 0;
    for (double cum = bucket_weight[0]; cum < top_p_target && last < 127;) cum += bucket_weight[++last];
    const auto end =
        std::partition(cand_.begin(), cand_.end(), [&](const Candidate& c) { return weight_bucket(c.weight) <= last; });
    cand_.resize(size_t(end - cand_.begin()));
    cand_.resize(top_p_cut(cand_, top_p_target));
  }

  if (p.min_p > 0.0f || p.top_p < 1.0f) {
    total = 0.0;
    for (const auto& c : cand_) total += c.weight;
  }
  return total;
}

int32_t Sampler::sample(std::span<const float> logits, const SamplingParams& params, const TokenHistory& history,
                        Rng& rng) {
  const auto penalized = prepare(logits, params, history);
  if (params.greedy()) return argmax(penalized);
  const double total = filter(penalized, params);
  const double u = rng.uniform() * total;
  double cum = 0.0;
  for (const auto& c : cand_) {
    cum += c.weight;
    if (u < cum) return c.id;
  }
  // Rounding left u at the very top: take the last token with any weight.
  for (auto it = cand_.rbegin(); it != cand_.rend(); ++it)
    if (it->weight > 0.0f) return it->id;
  return cand_.front().id;  // unreachable: the best token has weight 1
}

std::vector<float> Sampler::filtered_distribution(std::span<const float> logits, const SamplingParams& params,
                                                  const TokenHistory& history) {
  const auto penalized = prepare(logits, params, history);
  std::vector<float> probs(logits.size(), 0.0f);
  if (params.greedy()) {
    probs[argmax(penalized)] = 1.0f;
    return probs;
  }
  const double total = filter(penalized, params);
  for (const auto& c : cand_) probs[c.id] = float(c.weight / total);
  return probs;
}

std::vector<float> filtered_distribution(std::span<const float> logits, const SamplingParams& params,
                                         const TokenHistory& history) {
  return Sampler().filtered_distribution(logits, params, history);
}

}  // namespace pagoda
