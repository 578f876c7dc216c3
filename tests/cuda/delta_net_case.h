// The Gated DeltaNet kernels' cases (cuda/delta_net.h), shared by the GPU
// test (delta_net_test.cpp) and the CPU run of the kernels' own source
// (delta_net_emulation_test.cpp). One step of three sequences over a state
// pool of the second of two recurrent layers: five tokens from buffer 0 into
// buffer 1, one from no state into buffer 2, three from buffer 3 into none (a
// graph's padding). The runner has a method per launcher over host vectors:
//   void ranges(seq_of, first, end)
//   void conv(mixed, w, K, C, delta_case, pool, out)     (pool: the whole state pool, in and out)
//   void prepare(conv, C, hk, dk, eps, decay, beta, a, dt_bias, hv, n_tokens)
//   void rule(conv, C, hk, hv, dk, dv, decay, beta, scale, delta_case, pool, conv_floats, core)
//   void gates(qg, n_tokens, n_head, hd, q, gate, x)     (split_query_gate, then sigmoid_gate on x)
// where delta_case (a DeltaCase) gives the buffer ids and the sequences' ranges.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/delta_net.h"
#include "cuda_test_util.h"
#include "kernels/delta_net.h"

namespace pagoda::cuda::testing {

struct DeltaCase {
  static constexpr int kK = 4, kHk = 2, kHv = 4, kDk = 48, kDv = 48;  // 48: a lane's second element half used
  static constexpr int kC = 2 * kHk * kDk + kHv * kDv;
  static constexpr int64_t kConvFloats = int64_t(kK - 1) * kC, kLayerFloats = kConvFloats + int64_t(kHv) * kDv * kDk;
  static constexpr int64_t kBufferFloats = 2 * kLayerFloats;  // two recurrent layers; the case is the second's
  static constexpr int kBuffers = 4;
  std::vector<int32_t> seq_of = {0, 0, 0, 0, 0, 1, 2, 2, 2}, first = {0, 5, 6}, end = {5, 6, 9};
  std::vector<int32_t> in = {0, -1, 3}, out = {1, 2, -1};
  int n_tokens() const { return int(seq_of.size()); }
  int n_seqs() const { return int(in.size()); }
  // A DeltaStates over host vectors (the runner points it at its own copies).
  DeltaStates states(std::vector<float>& pool) const {
    return {.layer = pool.data() + kLayerFloats,
            .buffer_floats = kBufferFloats,
            .in = in.data(),
            .out = out.data(),
            .seq_of = seq_of.data(),
            .first = first.data(),
            .end = end.data()};
  }
};

template <class Run>
void expect_sequence_ranges(Run& run) {
  const DeltaCase c;
  std::vector<int32_t> first(3, -1), end(3, -1);
  run.ranges(c.seq_of, first, end);
  EXPECT_EQ(first, c.first);
  EXPECT_EQ(end, c.end);
}

// The convolution against a double loop over each sequence's history, and
// the state each sequence leaves (buffer 1: sequence 0's last three inputs,
// all its own tokens'; buffer 2: sequence 1's token behind two zero rows);
// the other buffers and the first layer's parts untouched.
template <class Run>
void expect_conv_matches(Run& run) {
  const DeltaCase c;
  constexpr int K = DeltaCase::kK, C = DeltaCase::kC;
  std::mt19937 rng(601);
  const std::vector<float> mixed = random_floats(size_t(c.n_tokens()) * C, rng);
  const std::vector<float> w = random_floats(size_t(K) * C, rng);
  std::vector<float> pool = random_floats(size_t(DeltaCase::kBuffers * DeltaCase::kBufferFloats), rng);
  const std::vector<float> before = pool;
  std::vector<float> out = nan_floats(mixed.size());
  run.conv(mixed, w, K, C, c, pool, out);
  auto state = [&](const std::vector<float>& p, int b, int j, int ch) {
    return double(p[size_t(b * DeltaCase::kBufferFloats + DeltaCase::kLayerFloats + int64_t(j) * C + ch)]);
  };
  for (int t = 0; t < c.n_tokens(); ++t) {
    const int s = c.seq_of[size_t(t)], i = t - c.first[size_t(s)];
    for (int ch = 0; ch < C; ++ch) {
      double y = 0, mag = 0;
      for (int tap = 0; tap < K; ++tap) {
        const int j = i + tap;  // history index: K-1 state rows, then the tokens
        const double x = j >= K - 1            ? mixed[size_t((c.first[size_t(s)] + j - (K - 1)) * C + ch)]
                         : c.in[size_t(s)] < 0 ? 0.0
                                               : state(before, c.in[size_t(s)], j, ch);
        y += w[size_t(tap * C + ch)] * x;
        mag += std::abs(w[size_t(tap * C + ch)] * x);
      }
      ASSERT_NEAR(out[size_t(t * C + ch)], y / (1 + std::exp(-y)), 1e-5 * (mag + 1)) << "token " << t << " ch " << ch;
    }
  }
  for (int ch = 0; ch < C; ++ch)
    for (int j = 0; j < K - 1; ++j) {
      ASSERT_EQ(state(pool, 1, j, ch), mixed[size_t((2 + j) * C + ch)]) << "buffer 1 row " << j;
      ASSERT_EQ(state(pool, 2, j, ch), j < K - 2 ? 0.0 : mixed[size_t(5 * C + ch)]) << "buffer 2 row " << j;
    }
  for (size_t i = 0; i < pool.size(); ++i) {
    const int64_t b = int64_t(i) / DeltaCase::kBufferFloats, at = int64_t(i) % DeltaCase::kBufferFloats;
    const bool written =
        (b == 1 || b == 2) && at >= DeltaCase::kLayerFloats && at < DeltaCase::kLayerFloats + DeltaCase::kConvFloats;
    if (!written) ASSERT_EQ(pool[i], before[i]) << "state float " << i << " changed";
  }
}

// Unit-length q and k heads (the rest of the row untouched), the decays and rates.
template <class Run>
void expect_prepare_matches(Run& run) {
  constexpr int C = DeltaCase::kC, hk = DeltaCase::kHk, hv = DeltaCase::kHv, dk = DeltaCase::kDk, T = 9;
  std::mt19937 rng(602);
  const std::vector<float> conv0 = random_floats(size_t(T) * C, rng, 2.0f);
  std::vector<float> conv = conv0, decay = random_floats(size_t(T) * hv, rng, 4.0f),
                     beta = random_floats(size_t(T) * hv, rng, 3.0f);
  decay[0] = 30.0f;  // softplus's linear branch
  const std::vector<float> decay0 = decay, beta0 = beta;
  const std::vector<float> a = {-0.5f, -1.0f, -2.0f, -0.25f}, dt_bias = {0.1f, -0.3f, 0.5f, 0.0f};
  const float eps = 1e-6f;
  run.prepare(conv, C, hk, dk, eps, decay, beta, a, dt_bias, hv, T);
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2 * hk; ++h) {
      double ss = 0;
      for (int i = 0; i < dk; ++i) ss += double(conv0[size_t(t * C + h * dk + i)]) * conv0[size_t(t * C + h * dk + i)];
      for (int i = 0; i < dk; ++i)
        ASSERT_NEAR(conv[size_t(t * C + h * dk + i)], conv0[size_t(t * C + h * dk + i)] / std::sqrt(ss + eps), 1e-6)
            << "token " << t << " head " << h;
    }
    for (int i = 2 * hk * dk; i < C; ++i) ASSERT_EQ(conv[size_t(t * C + i)], conv0[size_t(t * C + i)]);
    for (int h = 0; h < hv; ++h) {
      const double g = double(decay0[size_t(t * hv + h)]) + dt_bias[size_t(h)];
      const double want = std::exp(a[size_t(h)] * (g > 20 ? g : std::log1p(std::exp(g))));
      ASSERT_NEAR(decay[size_t(t * hv + h)], want, 1e-6 * want + 1e-30) << "token " << t << " head " << h;
      ASSERT_NEAR(beta[size_t(t * hv + h)], 1 / (1 + std::exp(-double(beta0[size_t(t * hv + h)]))), 1e-6);
    }
  }
}

// The recurrence against the CPU model's own step (kernels/delta_net.h), token
// by token per (sequence, head): the reads, and the matrices each sequence leaves.
template <class Run>
void expect_rule_matches(Run& run) {
  const DeltaCase c;
  constexpr int C = DeltaCase::kC, hk = DeltaCase::kHk, hv = DeltaCase::kHv, dk = DeltaCase::kDk, dv = DeltaCase::kDv;
  std::mt19937 rng(603);
  const int T = c.n_tokens();
  std::vector<float> conv = random_floats(size_t(T) * C, rng);
  for (int t = 0; t < T; ++t)  // q and k of unit length, as delta_prepare leaves them
    for (int h = 0; h < 2 * hk; ++h) {
      float* x = &conv[size_t(t * C + h * dk)];
      double ss = 0;
      for (int i = 0; i < dk; ++i) ss += double(x[i]) * x[i];
      for (int i = 0; i < dk; ++i) x[i] = float(x[i] / std::sqrt(ss));
    }
  std::vector<float> decay(size_t(T) * hv), beta(size_t(T) * hv);
  std::uniform_real_distribution<float> unit(0.5f, 1.0f);
  for (float& g : decay) g = unit(rng);
  for (float& b : beta) b = unit(rng) - 0.4f;
  std::vector<float> pool = random_floats(size_t(DeltaCase::kBuffers * DeltaCase::kBufferFloats), rng, 0.3f);
  const std::vector<float> before = pool;
  std::vector<float> core = nan_floats(size_t(T) * hv * dv);
  const float scale = 1.0f / std::sqrt(float(dk));
  run.rule(conv, C, hk, hv, dk, dv, decay, beta, scale, c, pool, DeltaCase::kConvFloats, core);
  std::vector<float> want_core(core.size()), want_pool = before;
  auto matrix = [&](std::vector<float>& p, int b, int h) {
    return p.data() + b * DeltaCase::kBufferFloats + DeltaCase::kLayerFloats + DeltaCase::kConvFloats +
           int64_t(h) * dv * dk;
  };
  for (int s = 0; s < c.n_seqs(); ++s)
    for (int h = 0; h < hv; ++h) {
      std::vector<float> S(size_t(dv) * dk);
      const float* s_in = c.in[size_t(s)] < 0 ? nullptr : matrix(want_pool, c.in[size_t(s)], h);
      for (int t = c.first[size_t(s)]; t < c.end[size_t(s)]; ++t) {
        const float* q = &conv[size_t(t * C + (h % hk) * dk)];
        delta_net_step(t == c.first[size_t(s)] ? s_in : S.data(), S.data(), dv, dk, q, q + hk * dk,
                       &conv[size_t(t * C + 2 * hk * dk + h * dv)], decay[size_t(t * hv + h)], beta[size_t(t * hv + h)],
                       scale, &want_core[size_t(t * hv * dv + h * dv)]);
      }
      if (c.out[size_t(s)] >= 0) std::copy(S.begin(), S.end(), matrix(want_pool, c.out[size_t(s)], h));
    }
  for (size_t i = 0; i < core.size(); ++i) ASSERT_NEAR(core[i], want_core[i], 1e-5) << "core " << i;
  for (size_t i = 0; i < pool.size(); ++i) ASSERT_NEAR(pool[i], want_pool[i], 1e-5) << "state float " << i;
}

// Attention's output gate: per head the query then its gate, and x / (1 + exp(-gate)).
template <class Run>
void expect_gates_match(Run& run) {
  std::mt19937 rng(604);
  const int T = 3, n_head = 5, hd = 40;
  const std::vector<float> qg = random_floats(size_t(T) * n_head * 2 * hd, rng, 3.0f);
  std::vector<float> q = nan_floats(size_t(T) * n_head * hd), gate = q;
  const std::vector<float> x0 = random_floats(q.size(), rng);
  std::vector<float> x = x0;
  run.gates(qg, T, n_head, hd, q, gate, x);
  for (int h = 0; h < T * n_head; ++h)
    for (int d = 0; d < hd; ++d) {
      const size_t i = size_t(h * hd + d);
      ASSERT_EQ(q[i], qg[size_t(h * 2 * hd + d)]);
      ASSERT_EQ(gate[i], qg[size_t(h * 2 * hd + hd + d)]);
      ASSERT_NEAR(x[i], x0[i] / (1 + std::exp(-double(gate[i]))), 1e-6 * std::abs(x0[i]) + 1e-30);
    }
}

}  // namespace pagoda::cuda::testing
