// Row panels (quant/panels.h): packing keeps every byte (unpacking gives the
// rows back), and the panel kernels, SIMD and scalar, equal vec_dot on the
// original rows bit for bit, for 1..8 tokens and several widths.
#include "quant/panels.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "quant/dot.h"
#include "quant/rows.h"
#include "random_blocks.h"
#include "simd_targets.h"

namespace pagoda {
namespace {

// n_tokens activation rows of n elements quantized to xt, one after another;
// `extreme` makes every code +-127.
std::vector<uint8_t> activations(TensorType xt, size_t n, int n_tokens, std::mt19937& rng, bool extreme) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n);
  std::vector<uint8_t> out;
  for (int k = 0; k < n_tokens; ++k) {
    for (auto& v : x) v = extreme ? (rng() % 2 ? 1.0f : -1.0f) : g(rng);
    const auto q = quantize(xt, x.data(), n);
    out.insert(out.end(), q.begin(), q.end());
  }
  return out;
}

TEST(Panels, PackKeepsEveryByteAndLeavesTheTailRowMajor) {
  std::mt19937 rng(1);
  const TensorType t = TensorType::Q8_0;
  const size_t n = 96, rb = row_bytes(t, n);
  const int rows = 2 * kPanelRows + 5;
  const auto original = testing::random_blocks(t, n * rows, rng);
  auto packed = original;
  ASSERT_EQ(pack_panels(t, packed.data(), rb, rows), 2 * kPanelRows);
  EXPECT_NE(packed, original);
  std::vector<uint8_t> row(rb);
  for (int r = 0; r < 2 * kPanelRows; ++r) {
    unpack_panel_row(t, packed.data() + size_t(r / kPanelRows * kPanelRows) * rb, rb, r % kPanelRows, row.data());
    EXPECT_EQ(0, std::memcmp(row.data(), original.data() + size_t(r) * rb, rb)) << r;
  }
  EXPECT_EQ(0, std::memcmp(packed.data() + 2 * kPanelRows * rb, original.data() + 2 * kPanelRows * rb, 5 * rb));
}

TEST(Panels, KernelsMatchVecDotBitForBit) {
  std::mt19937 rng(2);
  const TensorType t = TensorType::Q8_0, xt = activation_type(t);
  for (size_t n : {size_t(32), size_t(96), size_t(2048)})
    for (bool extreme : {false, true}) {
      const size_t rb = row_bytes(t, n), xb = row_bytes(xt, n);
      const auto rows = testing::random_blocks(t, n * kPanelRows, rng);
      auto panel = rows;
      pack_panels(t, panel.data(), rb, kPanelRows);
      const auto x = activations(xt, n, kPanelTokensMax + 3, rng, extreme);
      PanelActivations a;
      prepare_panel_activations(t, x.data(), xb, kPanelTokensMax + 3, n / kQK, a);
      for (int first : {0, 3})
        for (int k = 1; k <= kPanelTokensMax; ++k) {
          const size_t stride = kPanelRows + 3;
          std::vector<float> fast(size_t(k) * stride, -1.0f), ref(size_t(k) * stride, -1.0f);
          testing::for_each_simd_target([&](int64_t) { panel_dot(t, panel.data(), a, first, k, fast.data(), stride); });
          panel_dot_reference(t, panel.data(), a, first, k, ref.data(), stride);
          for (int j = 0; j < k; ++j)
            for (int r = 0; r < kPanelRows; ++r) {
              const float want = vec_dot(t, rows.data() + size_t(r) * rb, x.data() + size_t(first + j) * xb, n);
              ASSERT_EQ(ref[size_t(j) * stride + r], want) << "n " << n << " token " << j << " row " << r;
              ASSERT_EQ(fast[size_t(j) * stride + r], want) << "n " << n << " token " << j << " row " << r;
            }
          EXPECT_EQ(fast[kPanelRows], -1.0f);  // nothing written past the panel's rows
        }
    }
}

TEST(Panels, BadArgumentsAreRejected) {
  PanelActivations a;
  std::vector<uint8_t> x(row_bytes(TensorType::Q8_0, 32));
  prepare_panel_activations(TensorType::Q8_0, x.data(), x.size(), 1, 1, a);
  std::vector<uint8_t> panel(kPanelRows * x.size());
  float out[kPanelRows];
  EXPECT_THROW(panel_dot(TensorType::Q8_0, panel.data(), a, 0, 2, out, kPanelRows), InvalidArgument);
  EXPECT_THROW(panel_dot(TensorType::Q8_0, panel.data(), a, 0, 0, out, kPanelRows), InvalidArgument);
  EXPECT_THROW(pack_panels(TensorType::F16, panel.data(), 64, 16), Unsupported);
}

}  // namespace
}  // namespace pagoda
