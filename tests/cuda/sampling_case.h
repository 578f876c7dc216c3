// The device sampling test cases, shared by the GPU test (sampling_test.cpp)
// and the CPU run of the kernel's own code (sampling_emulation_test.cpp):
// batches of logits rows with their RowSampling records and the step's lists,
// and the comparison with sampling/row_sample.h's reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "sampling/logprobs.h"
#include "sampling/row_sample.h"

namespace pagoda::cuda::testing {

constexpr float kSampleInf = std::numeric_limits<float>::infinity();

// One launch's input: rows of one vocabulary, the step's lists they point into.
struct SamplingBatch {
  int32_t vocab = 0;
  std::vector<float> logits;  // [rows][vocab]
  std::vector<RowSampling> rows;
  std::vector<LogitAdjust> adjusts;
  std::vector<PenaltyEntry> penalties;
  std::vector<std::string> names;  // per row, for the failure messages

  int32_t n_rows() const { return int32_t(rows.size()); }
  std::span<const float> row_logits(int32_t r) const {
    return std::span<const float>(logits).subspan(size_t(r) * size_t(vocab), size_t(vocab));
  }
  std::span<const LogitAdjust> row_adjusts(int32_t r) const {
    return std::span<const LogitAdjust>(adjusts).subspan(size_t(rows[r].adjust_begin), size_t(rows[r].adjust_count));
  }
  std::span<const PenaltyEntry> row_penalties(int32_t r) const {
    return std::span<const PenaltyEntry>(penalties).subspan(size_t(rows[r].penalty_begin),
                                                            size_t(rows[r].penalty_count));
  }

  // Appends a row; its entries go to the end of the step's lists.
  void add(std::string name, const std::vector<float>& l, RowSampling r, const std::vector<LogitAdjust>& adj = {},
           const std::vector<PenaltyEntry>& pen = {}) {
    r.adjust_begin = int32_t(adjusts.size());
    r.adjust_count = int32_t(adj.size());
    r.penalty_begin = int32_t(penalties.size());
    r.penalty_count = int32_t(pen.size());
    adjusts.insert(adjusts.end(), adj.begin(), adj.end());
    penalties.insert(penalties.end(), pen.begin(), pen.end());
    logits.insert(logits.end(), l.begin(), l.end());
    rows.push_back(r);
    names.push_back(std::move(name));
  }
};

// Normal logits scaled by sigma; with step > 0 rounded to its multiples, so many tie.
inline std::vector<float> sampling_logits(int32_t vocab, std::mt19937& rng, float sigma, float step = 0) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> l(static_cast<size_t>(vocab));
  for (float& x : l) x = step > 0 ? std::round(dist(rng) / step) * step : dist(rng);
  return l;
}

// n distinct tokens below vocab.
inline std::vector<int32_t> distinct_tokens(int32_t vocab, int32_t n, std::mt19937& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(size_t(std::min(n, vocab)));
  return ids;
}

inline RowSampling sampling_params(float temperature, int32_t top_k, float top_p, float min_p, int32_t n_logprobs,
                                   double uniform) {
  RowSampling r;
  r.uniform = uniform;
  r.temperature = temperature;
  r.top_k = top_k;
  r.top_p = top_p;
  r.min_p = min_p;
  r.n_logprobs = n_logprobs;
  return r;
}

// Every feature once, over one vocabulary: the filters alone and together,
// greedy, penalties, biases and masks, n_logprobs -1/0/5/20, and the two error rows.
inline SamplingBatch sampling_cases(int32_t vocab, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  SamplingBatch b;
  b.vocab = vocab;
  auto logits = [&](float step = 0) { return sampling_logits(vocab, rng, 2.5f, step); };
  b.add("greedy, ties", logits(0.5f), sampling_params(0, 0, 1, 0, 5, 0));
  b.add("temperature", logits(), sampling_params(0.7f, 0, 1, 0, -1, uni(rng)));
  b.add("top_k 1", logits(), sampling_params(1.3f, 1, 1, 0, 0, uni(rng)));
  b.add("top_k 40, ties", logits(0.25f), sampling_params(0.8f, 40, 1, 0, 20, uni(rng)));
  b.add("top_k = vocab", logits(), sampling_params(1.2f, vocab, 1, 0, 1, uni(rng)));
  b.add("top_p 0.9", logits(), sampling_params(1, 0, 0.9f, 0, -1, uni(rng)));
  b.add("top_p 0.01", logits(0.5f), sampling_params(1, 0, 0.01f, 0, 3, uni(rng)));
  b.add("min_p 0.05", logits(), sampling_params(1, 0, 1, 0.05f, 3, uni(rng)));
  b.add("min_p 1: the tied best only", logits(0.5f), sampling_params(1, 0, 1, 1.0f, -1, uni(rng)));
  b.add("top_k, top_p and min_p, ties", logits(0.25f), sampling_params(0.9f, 50, 0.8f, 0.02f, 5, uni(rng)));

  std::vector<PenaltyEntry> pen;
  std::uniform_int_distribution<int32_t> count(0, 3);
  for (int32_t t : distinct_tokens(vocab, std::max(vocab / 8, 5), rng)) pen.push_back({t, count(rng)});
  RowSampling p = sampling_params(1, 20, 1, 0, 5, uni(rng));
  p.repetition_penalty = 1.3f, p.frequency_penalty = 0.5f, p.presence_penalty = 0.4f;
  b.add("penalties, top_k 20", logits(), p, {}, pen);
  // The best tokens penalized: greedy picks another.
  std::vector<float> l = logits(0.5f);
  std::vector<PenaltyEntry> best_pen;
  const float best = *std::max_element(l.begin(), l.end());
  for (int32_t i = 0; i < vocab; ++i)
    if (l[size_t(i)] == best) best_pen.push_back({i, 1});
  p = sampling_params(0, 0, 1, 0, 0, 0);
  p.repetition_penalty = 1.5f, p.presence_penalty = 2.0f;
  b.add("penalties, greedy", l, p, {}, best_pen);

  std::vector<LogitAdjust> adj;
  const std::vector<int32_t> ids = distinct_tokens(vocab, vocab / 3, rng);
  adj.push_back({ids[0], 6.0f});
  adj.push_back({ids[1], -1.5f});
  for (size_t i = 2; i < ids.size(); ++i) adj.push_back({ids[i], -kSampleInf});
  b.add("bias and masks", logits(), sampling_params(1, 0, 0.95f, 0, 20, uni(rng)), adj);
  b.add("bias, greedy", logits(), sampling_params(0, 0, 1, 0, 2, 0), {{ids[1], 100.0f}});
  // Three tokens left: fewer than top_k and than n_logprobs.
  std::vector<LogitAdjust> most;
  for (int32_t i = 0; i < vocab; ++i)
    if (i != ids[0] && i != ids[1] && i != ids[2]) most.push_back({i, -kSampleInf});
  b.add("three unmasked", logits(), sampling_params(1, 10, 1, 0, 20, uni(rng)), most);
  b.add("all masked", logits(), sampling_params(1, 0, 1, 0, 5, uni(rng)), most,
        std::vector<PenaltyEntry>{{ids[0], 1}});  // and the rest masked below
  for (int32_t t : {ids[0], ids[1], ids[2]}) b.adjusts.push_back({t, -kSampleInf});
  b.rows.back().adjust_count += 3;
  b.add("combined, penalties, bias", logits(0.25f), sampling_params(1.1f, 30, 0.85f, 0.01f, 20, uni(rng)),
        {{ids[0], 3.0f}, {ids[3], -kSampleInf}}, pen);

  l = logits();
  l[size_t(vocab / 2)] = std::numeric_limits<float>::quiet_NaN();
  b.add("NaN", l, sampling_params(1, 0, 1, 0, 5, uni(rng)));
  l = logits();
  l[size_t(vocab - 1)] = kSampleInf;
  b.add("+inf", l, sampling_params(0, 0, 1, 0, -1, 0));
  l = logits();
  l[0] = -kSampleInf;  // -inf from the model is a model bug too
  b.add("-inf", l, sampling_params(1, 0, 1, 0, -1, uni(rng)));
  return b;
}

// The row repeated with uniforms in the middle of each kept token's interval
// (and at 0 and just below 1), so the whole kept set must be drawn.
inline SamplingBatch coverage_batch(const SamplingBatch& one) {
  const std::vector<float> p =
      row_distribution_reference(one.row_logits(0), one.rows[0], one.row_adjusts(0), one.row_penalties(0));
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  SamplingBatch b;
  b.vocab = one.vocab;
  const std::vector<float> l(one.logits.begin(), one.logits.end());
  const std::vector<LogitAdjust> adj(one.adjusts.begin(), one.adjusts.end());
  const std::vector<PenaltyEntry> pen(one.penalties.begin(), one.penalties.end());
  RowSampling r = one.rows[0];
  double cum = 0;
  for (int32_t i = 0; i < one.vocab; ++i) {
    if (p[size_t(i)] == 0) continue;
    r.uniform = (cum + p[size_t(i)] / 2) / total;
    b.add(one.names[0] + ", token " + std::to_string(i), l, r, adj, pen);
    cum += p[size_t(i)];
  }
  for (double u : {0.0, 0.9999999999}) {
    r.uniform = u;
    b.add(one.names[0] + ", uniform " + std::to_string(u), l, r, adj, pen);
  }
  return b;
}

// Rows of the coverage test: few kept tokens each, so its rows stay few.
inline std::vector<SamplingBatch> coverage_rows(int32_t vocab, std::mt19937& rng) {
  std::vector<SamplingBatch> out;
  auto one = [&](std::string name, RowSampling r, std::vector<LogitAdjust> adj = {},
                 std::vector<PenaltyEntry> pen = {}) {
    SamplingBatch b;
    b.vocab = vocab;
    b.add(std::move(name), sampling_logits(vocab, rng, 1.5f, 0.25f), r, adj, pen);
    out.push_back(coverage_batch(b));
  };
  one("coverage top_k 6", sampling_params(1, 6, 1, 0, -1, 0));
  one("coverage top_p 0.3", sampling_params(0.5f, 0, 0.3f, 0, -1, 0));
  one("coverage min_p 0.3", sampling_params(1, 0, 1, 0.3f, -1, 0));
  RowSampling r = sampling_params(1.5f, 12, 0.7f, 0.05f, 1, 0);
  r.repetition_penalty = 1.2f, r.frequency_penalty = 0.3f;
  std::vector<PenaltyEntry> pen;
  for (int32_t t : distinct_tokens(vocab, vocab / 4, rng)) pen.push_back({t, int32_t(t % 3)});
  one("coverage combined", r, {{1, 2.0f}, {2, -kSampleInf}, {3, 1.0f}}, pen);
  return out;
}

// Each row of got against sample_row_reference(). The token may differ from
// the reference's only where uniform x total lies within 1e-6 (of the total)
// of an end of the drawn token's interval: the device's expf and its order of
// double sums move the boundaries by about that much, and no further.
inline void expect_sampled_rows(const SamplingBatch& b, const std::vector<SampledRow>& got) {
  ASSERT_EQ(got.size(), b.rows.size());
  for (int32_t r = 0; r < b.n_rows(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r) + ": " + b.names[size_t(r)]);
    const RowSampling& row = b.rows[size_t(r)];
    const SampledRow ref = sample_row_reference(b.row_logits(r), row, b.row_adjusts(r), b.row_penalties(r));
    const SampledRow& g = got[size_t(r)];
    ASSERT_EQ(g.status, ref.status);
    if (ref.status != SampledRow::kSampled) {
      EXPECT_EQ(g.token, -1);
      EXPECT_EQ(g.n_top, 0);
      continue;
    }
    if (g.token != ref.token) {
      ASSERT_GT(row.temperature, 0.0f) << "greedy must agree exactly: got " << g.token << ", want " << ref.token;
      ASSERT_GE(g.token, 0);
      ASSERT_LT(g.token, b.vocab);
      const std::vector<float> p =
          row_distribution_reference(b.row_logits(r), row, b.row_adjusts(r), b.row_penalties(r));
      ASSERT_GT(p[size_t(g.token)], 0.0f) << "drew " << g.token << ", which the reference does not keep";
      const double before = std::accumulate(p.begin(), p.begin() + g.token, 0.0);
      const double x = row.uniform * std::accumulate(p.begin(), p.end(), 0.0);
      EXPECT_TRUE(before - 1e-6 <= x && x < before + p[size_t(g.token)] + 1e-6)
          << "drew " << g.token << " (interval " << before << " + " << p[size_t(g.token)] << "), the reference "
          << ref.token << ", for u x total " << x;
    }
    if (row.n_logprobs < 0) {
      EXPECT_EQ(g.logprob, 0.0f);
      EXPECT_EQ(g.n_top, 0);
      continue;
    }
    std::vector<float> a(b.row_logits(r).begin(), b.row_logits(r).end());
    for (const LogitAdjust& e : b.row_adjusts(r)) a[size_t(e.token)] += e.add;
    EXPECT_NEAR(g.logprob, token_logprob(a, g.token), 1e-5);
    ASSERT_EQ(g.n_top, ref.n_top);
    for (int32_t k = 0; k < ref.n_top; ++k) {
      EXPECT_EQ(g.top[k].token, ref.top[k].token) << "top " << k;
      EXPECT_NEAR(g.top[k].logprob, ref.top[k].logprob, 1e-5) << "top " << k;
    }
  }
}

// A coverage batch (coverage_batch) drew every token the reference keeps, save
// ones too unlikely for their middle to lie clear of the tolerance.
inline void expect_covers(const SamplingBatch& b, const std::vector<SampledRow>& got) {
  const std::vector<float> p =
      row_distribution_reference(b.row_logits(0), b.rows[0], b.row_adjusts(0), b.row_penalties(0));
  std::set<int32_t> drawn;
  for (const SampledRow& g : got) drawn.insert(g.token);
  for (int32_t i = 0; i < b.vocab; ++i) {
    if (p[size_t(i)] > 1e-5f) {
      EXPECT_TRUE(drawn.count(i)) << b.names[0] << ": token " << i << " never drawn";
    }
  }
  for (int32_t t : drawn) EXPECT_GT(p[size_t(t)], 0.0f) << b.names[0] << ": drew " << t << ", not kept";
}

// Poison for the outputs: a row the kernel forgets to write fails the comparison.
inline std::vector<SampledRow> poisoned_rows(size_t n) {
  SampledRow bad;
  bad.status = -1;
  bad.token = -2;
  bad.logprob = std::numeric_limits<float>::quiet_NaN();
  bad.n_top = -1;
  return std::vector<SampledRow>(n, bad);
}

}  // namespace pagoda::cuda::testing
