// The mixture-of-experts kernels' cases (cuda/moe.h), shared by the GPU test
// (moe_test.cpp) and the CPU run of the kernels' own source
// (moe_emulation_test.cpp). Each check takes a runner with one method per
// launcher over host vectors (the emulation launches on them, the GPU test
// copies them over and back) and compares with the CPU's own code or a
// plain loop:
//   Routes route(logits, n_tokens, routing)
//   Groups group(experts, n_expert, tile_slots, max_tiles)
//   std::vector<float> mmq_experts(stack, weights, first_byte, x, n_x_rows, x_per_slot, groups, n_slots)
//   std::vector<float> matvec_experts(stack, weights, x, x_per_slot, groups, n_slots)
//   std::vector<float> add_expert_bias(y, bias, experts, n)
//   std::vector<float> combine(y, routes, scale (empty: none), n_tokens, n_used, n)
//   std::vector<float> swiglu_oai(gate, up)
//   std::vector<float> row_dot(x, w, n_tokens, n)
//   std::vector<float> add_gated(out, y, logit, n)
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda/mmq.h"
#include "cuda/moe.h"
#include "cuda_test_util.h"
#include "model/moe.h"
#include "model/ops.h"
#include "quant/dot.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"
#include "weights_case.h"

namespace pagoda::cuda::testing {

struct Routes {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

struct Groups {
  std::vector<int32_t> order;
  std::vector<ExpertTile> tiles;
};

// Logits on a grid of 1/64 with exact ties between some experts, a NaN and
// -inf here and there: distinct logits give probabilities a percent apart,
// so the device's expf cannot reorder them, and ties stay ties.
inline std::vector<float> router_logits(int n_tokens, int n_expert, std::mt19937& rng) {
  std::vector<float> z(size_t(n_tokens) * size_t(n_expert));
  std::uniform_int_distribution<int> grid(-256, 256);
  for (float& v : z) v = float(grid(rng)) / 64.0f;
  for (int t = 0; t < n_tokens; ++t) {
    float* row = &z[size_t(t) * size_t(n_expert)];
    if (n_expert > 3 && t % 3 == 0) row[n_expert - 1] = row[1];  // a tie: the lower index first
    if (n_expert > 4 && t % 4 == 1) row[2] = NAN;                // ranks last
    if (n_expert > 5 && t % 5 == 2) row[3] = -INFINITY;
  }
  return z;
}

// moe_route equals route_tokens: the same experts, and weights within
// weight_tolerance, relative (0 where expf is the host's).
template <class Run>
void expect_routes_match(Run& run, float weight_tolerance) {
  std::mt19937 rng(501);
  struct Shape {
    int n_expert, n_used;
    ExpertGating gating;
    bool normalize;
    float scale;
  };
  const Shape shapes[] = {
      {8, 2, ExpertGating::SoftmaxTopK, true, 1.0f},    {128, 8, ExpertGating::SoftmaxTopK, true, 1.0f},
      {32, 4, ExpertGating::TopKSoftmax, false, 1.0f},  {60, 4, ExpertGating::SoftmaxTopK, false, 2.5f},
      {512, 10, ExpertGating::SoftmaxTopK, true, 1.0f}, {4, 4, ExpertGating::TopKSoftmax, true, 1.0f},
      {1, 1, ExpertGating::SoftmaxTopK, true, 1.0f}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.n_expert) + " experts, " + std::to_string(s.n_used) + " a token");
    const int n_tokens = 70;  // more than one block of moe_route's threads
    const std::vector<float> z = router_logits(n_tokens, s.n_expert, rng);
    const MoeSpec spec{
        .n_expert = s.n_expert, .n_used = s.n_used, .gating = s.gating, .normalize = s.normalize, .scale = s.scale};
    std::vector<ExpertChoice> want(size_t(n_tokens) * size_t(s.n_used));
    route_tokens(spec, z.data(), n_tokens, want.data());
    const Routes got = run.route(z, n_tokens,
                                 MoeRouting{.n_expert = s.n_expert,
                                            .n_used = s.n_used,
                                            .softmax_first = s.gating == ExpertGating::SoftmaxTopK,
                                            .normalize = s.normalize,
                                            .scale = s.scale});
    ASSERT_EQ(got.experts.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got.experts[i], want[i].expert) << "token " << i / size_t(s.n_used) << " rank " << i % size_t(s.n_used);
      if (std::isnan(want[i].weight))  // a NaN logit under softmax-first: every weight of the token, as on the CPU
        ASSERT_TRUE(std::isnan(got.weights[i])) << "slot " << i;
      else
        ASSERT_NEAR(got.weights[i], want[i].weight, weight_tolerance * std::abs(want[i].weight)) << "slot " << i;
    }
  }
}

// A plain grouping: the slots sorted by expert, stably, each expert's run cut
// into tiles of up to tile_slots, padded with empty tiles to the most there can be.
inline Groups grouped(const std::vector<int32_t>& experts, int n_expert, int tile_slots = kExpertTileSlots) {
  Groups g;
  g.order.resize(experts.size());
  std::iota(g.order.begin(), g.order.end(), 0);
  std::stable_sort(g.order.begin(), g.order.end(),
                   [&](int a, int b) { return experts[size_t(a)] < experts[size_t(b)]; });
  for (int i = 0; i < int(experts.size());) {
    int j = i;
    while (j < int(experts.size()) && j - i < tile_slots &&
           experts[size_t(g.order[size_t(j)])] == experts[size_t(g.order[size_t(i)])])
      ++j;
    g.tiles.push_back({experts[size_t(g.order[size_t(i)])], i, j - i});
    i = j;
  }
  const size_t most = size_t(max_expert_tiles(int(experts.size()), n_expert, tile_slots));
  EXPECT_LE(g.tiles.size(), most);
  g.tiles.resize(most);
  return g;
}

// moe_group equals the plain grouping, for matvec's tiles of 8 and mmq's of
// 32: slot counts past one shared-memory chunk (1024), experts no slot
// chose, one expert.
template <class Run>
void expect_groups_match(Run& run) {
  std::mt19937 rng(502);
  for (const auto& [n_slots, n_expert] : std::vector<std::pair<int, int>>{
           {1, 8}, {7, 8}, {74, 8}, {300, 128}, {2500, 128}, {3000, 512}, {20, 1}, {5, 512}}) {
    for (int tile_slots : {kExpertTileSlots, kMmqExpertSlots}) {
      SCOPED_TRACE(std::to_string(n_slots) + " slots over " + std::to_string(n_expert) + " experts, tiles of " +
                   std::to_string(tile_slots));
      std::vector<int32_t> experts(static_cast<size_t>(n_slots));
      // Skewed: the low experts popular, many never chosen.
      for (int32_t& e : experts)
        e = int32_t(std::min<uint32_t>(rng() % uint32_t(n_expert), rng() % uint32_t(n_expert)));
      const Groups want = grouped(experts, n_expert, tile_slots);
      const Groups got = run.group(experts, n_expert, tile_slots, int(want.tiles.size()));
      ASSERT_EQ(got.order, want.order);
      ASSERT_EQ(got.tiles.size(), want.tiles.size());
      for (size_t i = 0; i < want.tiles.size(); ++i) {
        EXPECT_EQ(got.tiles[i].count, want.tiles[i].count) << "tile " << i;
        if (want.tiles[i].count == 0) continue;
        EXPECT_EQ(got.tiles[i].expert, want.tiles[i].expert) << "tile " << i;
        EXPECT_EQ(got.tiles[i].first, want.tiles[i].first) << "tile " << i;
      }
    }
  }
}

// Each of `types`: each slot's row of its expert against a double loop
// (within matvec's bound), shared inputs (gate, up) and own ones (down); and
// a slot's output bit-identical whatever else its tile holds.
template <class Run>
void expect_expert_matvecs_match(Run& run, std::span<const TensorType> types) {
  std::mt19937 rng(503);
  const int n_expert = 3, n_tokens = 11, k = 2;
  const int64_t rows = 9;
  for (TensorType t : types) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const int64_t cols = row_length(t);
    const std::vector<uint8_t> w = random_weights(t, rows * n_expert, cols, rng);
    const std::vector<float> wf = decode_cpu(t, w, rows * n_expert, cols);
    const ExpertStack stack{t, rows, cols, n_expert, nullptr};
    std::vector<int32_t> experts(size_t(n_tokens) * k);
    for (int32_t& e : experts) e = int32_t(rng() % n_expert);
    for (int x_per_slot : {k, 1}) {
      SCOPED_TRACE("x_per_slot " + std::to_string(x_per_slot));
      const int n_slots = int(experts.size());
      const std::vector<float> x = random_floats(size_t(n_slots / x_per_slot) * size_t(cols), rng);
      const std::vector<float> got = run.matvec_experts(stack, w, x, x_per_slot, grouped(experts, n_expert), n_slots);
      ASSERT_EQ(got.size(), size_t(n_slots) * rows);
      for (int s = 0; s < n_slots; ++s) {
        const size_t e = size_t(experts[size_t(s)]);
        const std::vector<float> we(wf.begin() + int64_t(e) * rows * cols, wf.begin() + int64_t(e + 1) * rows * cols);
        const std::vector<float> xs(x.begin() + (s / x_per_slot) * cols, x.begin() + (s / x_per_slot + 1) * cols);
        const std::vector<float> out(got.begin() + s * rows, got.begin() + (s + 1) * rows);
        SCOPED_TRACE("slot " + std::to_string(s));
        expect_matvec_matches(we, xs, out, 1, rows, cols);
      }
      // Slot 0 alone in its tile: the same bits.
      std::vector<int32_t> alone(experts.begin(), experts.begin() + 1);
      const std::vector<float> x0(x.begin(), x.begin() + cols);
      const std::vector<float> one = run.matvec_experts(stack, w, x0, 1, grouped(alone, n_expert), 1);
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(one[size_t(r)], got[size_t(r)]) << "row " << r;
    }
  }
}

// mmq_experts against the CPU's integer dots (quant/dot.h's vec_dot_scalar of
// the CPU's quantized activations), bit for bit: mmq's kinds, tiles of 32
// slots (an expert with more than one tile, others with one slot), shared
// inputs (gate, up) and own ones (down), a strided stack for Q4_K (gemma4's
// fused gate and up read as two: every other matrix).
template <class Run>
void expect_mmq_experts_match(Run& run) {
  std::mt19937 rng(506);
  const int n_expert = 3, n_tokens = 25, k = 2;
  const int64_t rows = 70;  // a full tile of 64 rows and a partial one
  // gpt-oss's MXFP4 experts, and a format of each of mmq's kinds.
  for (TensorType t : {TensorType::Q8_0, TensorType::MXFP4, TensorType::Q4_K, TensorType::IQ4_XS, TensorType::Q6_K}) {
    const bool strided = t == TensorType::Q4_K;  // as a gemma4 Q4_K_M file's fused gate and up
    SCOPED_TRACE(std::string(tensor_type_name(t)) + (strided ? ", strided" : ""));
    const int64_t cols = activation_type(t) == TensorType::Q8_K ? 2 * kQKK : 11 * kQK;
    const size_t rb = weight_row_bytes(t, cols);
    const int stored = strided ? 2 * n_expert : n_expert;  // strided: expert e is matrix 2e + 1
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(rows * stored * cols), rng);
    const size_t stride = strided ? 2 * size_t(rows) * rb : size_t(rows) * rb;
    const ExpertStack stack{t, rows, cols, n_expert, nullptr, strided ? int64_t(stride) : 0};
    const size_t first = strided ? size_t(rows) * rb : 0;
    std::vector<int32_t> experts(size_t(n_tokens) * k);
    for (size_t i = 0; i < experts.size(); ++i) experts[i] = i >= 10 && i < 50 ? 1 : int32_t(rng() % n_expert);
    for (int x_per_slot : {k, 1}) {
      SCOPED_TRACE("x_per_slot " + std::to_string(x_per_slot));
      const int n_slots = int(experts.size()), n_x = n_slots / x_per_slot;
      const std::vector<float> x = random_floats(size_t(n_x) * size_t(cols), rng);
      const std::vector<float> got =
          run.mmq_experts(stack, w, first, x, n_x, x_per_slot, grouped(experts, n_expert, kMmqExpertSlots), n_slots);
      ASSERT_EQ(got.size(), size_t(n_slots) * rows);
      // mmvq_experts (decode's tiles of 8) over the first 4 tokens' slots, shared inputs only:
      // the same terms summed in another order, within (terms + 8) 2^-24 of their magnitudes
      // twice over (as expect_near_integer_path).
      const int n_decode = x_per_slot == k ? 4 * k : 0;
      const std::vector<int32_t> decode_experts(experts.begin(), experts.begin() + n_decode);
      const std::vector<float> decoded =
          n_decode == 0 ? std::vector<float>{}
                        : run.mmq_experts(stack, w, first, x, n_x, x_per_slot,
                                          grouped(decode_experts, n_expert, kExpertTileSlots), n_decode, true);
      std::vector<uint8_t> xq(row_bytes(activation_type(t), size_t(cols)));
      std::vector<float> wf(static_cast<size_t>(cols));
      for (int s = 0; s < n_slots; ++s) {
        const float* xs = &x[size_t(s / x_per_slot) * size_t(cols)];
        quantize_row(activation_type(t), xs, xq.data(), size_t(cols));
        const uint8_t* e = w.data() + first + size_t(experts[size_t(s)]) * stride;
        for (int64_t r = 0; r < rows; ++r) {
          const float want = vec_dot_scalar(t, e + size_t(r) * rb, xq.data(), size_t(cols));
          ASSERT_EQ(got[size_t(s * rows + r)], want) << "slot " << s << " row " << r;
          if (s >= n_decode) continue;
          dequantize_row(t, e + size_t(r) * rb, wf.data(), wf.size());
          double mag = 0;
          for (int64_t i = 0; i < cols; ++i) mag += std::abs(double(wf[size_t(i)]) * xs[i]);
          ASSERT_NEAR(decoded[size_t(s * rows + r)], want, 2 * double(cols / 32 + 8) * 0x1p-24 * 1.25 * mag + 1e-30)
              << "decode, slot " << s << " row " << r;
        }
      }
    }
  }
}

// The expert biases, the weighted sum in the router's order (with and without
// gpt-oss-style scales) against the CPU's formula, and the clamped SwiGLU
// against the CPU's gated_activation.
template <class Run>
void expect_bias_combine_and_activation_match(Run& run, float activation_tolerance) {
  std::mt19937 rng(504);
  const int n_tokens = 5, k = 3, n = 300, n_expert = 4;
  Routes routes;
  for (int i = 0; i < n_tokens * k; ++i) {
    routes.experts.push_back(int32_t(rng() % n_expert));
    routes.weights.push_back(float(rng() % 1000) / 1000.0f);
  }
  const std::vector<float> y = random_floats(size_t(n_tokens * k * n), rng);
  const std::vector<float> bias = random_floats(size_t(n_expert * n), rng);
  const std::vector<float> biased = run.add_expert_bias(y, bias, routes.experts, n);
  for (int s = 0; s < n_tokens * k; ++s)
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(biased[size_t(s * n + i)], y[size_t(s * n + i)] + bias[size_t(routes.experts[size_t(s)] * n + i)]);
  const std::vector<float> scales = {0.5f, 1.25f, 3.0f, 0.75f};
  for (bool scaled : {false, true}) {
    SCOPED_TRACE(scaled ? "scaled" : "unscaled");
    const std::vector<float> got = run.combine(y, routes, scaled ? scales : std::vector<float>{}, n_tokens, k, n);
    for (int t = 0; t < n_tokens; ++t)
      for (int i = 0; i < n; ++i) {
        float o = 0;  // model/moe.cpp's order and roundings
        for (int r = 0; r < k; ++r) {
          const size_t s = size_t(t * k + r);
          float v = y[s * n + size_t(i)];
          if (scaled) v *= scales[size_t(routes.experts[s])];
          o += routes.weights[s] * v;
        }
        ASSERT_EQ(got[size_t(t * n + i)], o) << "token " << t << " element " << i;
      }
  }
  std::vector<float> gate = random_floats(1001, rng, 6.0f), up = random_floats(1001, rng, 6.0f);
  gate[0] = 7.5f, gate[1] = -30.0f, up[2] = 9.0f, up[3] = -9.0f;  // the clamps and a saturated sigmoid
  const std::vector<float> got = run.swiglu_oai(gate, up);
  std::vector<float> want = gate;
  gated_activation(Activation::SwigluOai, want.data(), up.data(), int(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], activation_tolerance * (std::abs(want[i]) + 1e-30f)) << i;
}

// The shared expert's gate: each token's dot with the gate vector (in
// double, as the CPU), and the output added times its sigmoid.
template <class Run>
void expect_shared_expert_gate_matches(Run& run) {
  std::mt19937 rng(505);
  const int n_tokens = 3, n = 2000;
  const std::vector<float> x = random_floats(size_t(n_tokens) * n, rng), w = random_floats(size_t(n), rng, 0.05f);
  const std::vector<float> logit = run.row_dot(x, w, n_tokens, n);
  for (int t = 0; t < n_tokens; ++t) {
    double dot = 0, mag = 0;
    for (int i = 0; i < n; ++i) {
      dot += double(w[size_t(i)]) * x[size_t(t * n + i)];
      mag += std::abs(double(w[size_t(i)]) * x[size_t(t * n + i)]);
    }
    ASSERT_NEAR(logit[size_t(t)], dot, 1e-6 * mag) << "token " << t;
  }
  const std::vector<float> y = random_floats(x.size(), rng), out0 = random_floats(x.size(), rng);
  const std::vector<float> out = run.add_gated(out0, y, logit, n);
  for (size_t i = 0; i < out.size(); ++i) {
    const double g = 1 / (1 + std::exp(-double(logit[i / size_t(n)])));
    ASSERT_NEAR(out[i], out0[i] + g * y[i], 1e-6 * (std::abs(out0[i]) + std::abs(y[i]))) << i;
  }
}

}  // namespace pagoda::cuda::testing
