// The flattening, and the reference: every step as a plain loop over the
// row, in the order sampler.h and logit_adjust.h define.
#include "sampling/row_sample.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>

#include "sampling/logit_adjust.h"
#include "sampling/logprobs.h"
#include "util/error.h"

namespace pagoda {

namespace {

constexpr float kRowInf = std::numeric_limits<float>::infinity();

// The penalties' formula, as Sampler's (sampler.h, step 1).
float penalized_logit(float logit, const PenaltyEntry& e, const RowSampling& r) {
  if (r.repetition_penalty != 1.0f) logit = logit > 0.0f ? logit / r.repetition_penalty : logit * r.repetition_penalty;
  if (e.output_count > 0) logit -= r.frequency_penalty * float(e.output_count) + r.presence_penalty;
  return std::min(logit, FLT_MAX);
}

std::vector<float> adjusted_row(std::span<const float> logits, std::span<const LogitAdjust> adjusts) {
  std::vector<float> a(logits.begin(), logits.end());
  for (const auto& e : adjusts) a.at(size_t(e.token)) += e.add;
  return a;
}

std::vector<float> penalized_row(std::vector<float> a, const RowSampling& r, std::span<const PenaltyEntry> penalties) {
  for (const auto& e : penalties) a.at(size_t(e.token)) = penalized_logit(a[size_t(e.token)], e, r);
  return a;
}

// Kept tokens' weights exp((logit - max) / T), by id; 0 for the others.
// Empty when every logit is -inf.
std::vector<double> kept_weights(const std::vector<float>& l, const RowSampling& r) {
  std::vector<int32_t> order;  // "most likely first": higher logit, then lower id
  for (int32_t i = 0; i < int32_t(l.size()); ++i)
    if (l[size_t(i)] != -kRowInf) order.push_back(i);
  if (order.empty()) return {};
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
  if (r.top_k > 0 && size_t(r.top_k) < order.size()) order.resize(size_t(r.top_k));
  const float best = l[size_t(order[0])];
  std::vector<double> w(l.size(), 0.0);
  double total = 0;
  for (int32_t i : order) {
    w[size_t(i)] = l[size_t(i)] == best ? 1.0 : double(std::exp((l[size_t(i)] - best) / r.temperature));
    total += w[size_t(i)];
  }
  // Top-p: the shortest most-likely prefix reaching top_p of the top-k
  // total; min-p's dropped tokens count toward neither (sampler.cpp says why
  // the result is the same as min-p after top-p).
  const double target = double(r.top_p) * total;
  double cum = 0;
  bool cut = false;
  for (int32_t i : order) {
    double& wi = w[size_t(i)];
    if (cut || wi < double(r.min_p)) {
      wi = 0;
      continue;
    }
    cum += wi;
    cut = r.top_p < 1.0f && cum >= target;
  }
  return w;
}

}  // namespace

RowSampling flatten_row(const SamplingParams& params, double uniform, std::span<const int32_t> eog_ids,
                        int64_t n_generated, const TokenHistory& history, std::vector<LogitAdjust>& adjusts,
                        std::vector<PenaltyEntry>& penalties) {
  RowSampling r{.uniform = uniform,
                .temperature = params.temperature,
                .top_k = params.top_k,
                .top_p = params.top_p,
                .min_p = params.min_p,
                .repetition_penalty = params.repetition_penalty,
                .frequency_penalty = params.frequency_penalty,
                .presence_penalty = params.presence_penalty,
                .n_logprobs = params.logprobs ? *params.logprobs : -1};
  r.adjust_begin = int32_t(adjusts.size());
  if (adjusts_logits(params, n_generated)) {
    // adjust_logits' effect, one entry a token: the sum of its biases, or -inf when masked.
    const size_t first = adjusts.size();
    auto add = [&](int32_t token, float v) {
      for (size_t i = first; i < adjusts.size(); ++i)
        if (adjusts[i].token == token) return void(adjusts[i].add += v);
      adjusts.push_back({token, v});
    };
    for (const auto& [id, bias] : params.logit_bias) add(id, bias);
    if (n_generated < params.min_tokens) {
      if (!params.ignore_eos)
        for (int32_t id : eog_ids) add(id, -kRowInf);
      for (int32_t id : params.stop_token_ids) add(id, -kRowInf);
    }
  }
  r.adjust_count = int32_t(adjusts.size()) - r.adjust_begin;
  r.penalty_begin = int32_t(penalties.size());
  if (params.has_penalties())
    for (const auto& e : history.entries()) penalties.push_back({e.token, e.output_count});
  r.penalty_count = int32_t(penalties.size()) - r.penalty_begin;
  return r;
}

std::vector<float> row_distribution_reference(std::span<const float> logits, const RowSampling& row,
                                              std::span<const LogitAdjust> adjusts,
                                              std::span<const PenaltyEntry> penalties) {
  const std::vector<float> l = penalized_row(adjusted_row(logits, adjusts), row, penalties);
  std::vector<float> p(l.size(), 0.0f);
  if (row.temperature == 0.0f) {
    const auto best = std::max_element(l.begin(), l.end());  // the first maximum: lowest id on ties
    if (best != l.end() && *best != -kRowInf) p[size_t(best - l.begin())] = 1.0f;
    return p;
  }
  const std::vector<double> w = kept_weights(l, row);
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  for (size_t i = 0; i < w.size(); ++i) p[i] = float(w[i] / total);
  return p;
}

SampledRow sample_row_reference(std::span<const float> logits, const RowSampling& row,
                                std::span<const LogitAdjust> adjusts, std::span<const PenaltyEntry> penalties) {
  SampledRow out;
  if (std::any_of(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); })) {
    out.status = SampledRow::kNonFinite;
    return out;
  }
  const std::vector<float> a = adjusted_row(logits, adjusts);
  const std::vector<float> l = penalized_row(a, row, penalties);
  if (std::all_of(l.begin(), l.end(), [](float x) { return x == -kRowInf; })) {
    out.status = SampledRow::kAllMasked;
    return out;
  }
  if (row.temperature == 0.0f) {
    out.token = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
  } else {
    // The draw: the first token in id order whose cumulative weight exceeds u * total.
    const std::vector<double> w = kept_weights(l, row);
    const double u = row.uniform * std::accumulate(w.begin(), w.end(), 0.0);
    double cum = 0;
    for (size_t i = 0; i < w.size() && out.token < 0; ++i)
      if (w[i] > 0 && u < (cum += w[i])) out.token = int32_t(i);
    for (size_t i = w.size(); i-- > 0 && out.token < 0;)  // rounding left u at the top: the last kept
      if (w[i] > 0) out.token = int32_t(i);
  }
  if (row.n_logprobs >= 0) {
    out.logprob = token_logprob(a, out.token);
    for (const auto& t : top_logprobs(a, std::min(row.n_logprobs, SamplingParams::kMaxLogprobs)))
      if (!std::isinf(t.logprob)) out.top[out.n_top++] = {t.token, t.logprob};
  }
  return out;
}

}  // namespace pagoda
