// Row panels (kernels/panels.h): packing keeps every byte (unpacking gives the
// rows back), and the panel kernels, SIMD and scalar, equal vec_dot on the
// original rows bit for bit, for every format, 1..8 tokens, several widths,
// random bytes (every code, scale and min) and extreme activations; panels
// side by side equal one at a time.
#include "kernels/panels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant_dot.h"
#include "quant/dot.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"
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

const TensorType kTypes[] = {TensorType::Q8_0,   TensorType::Q4_0,  TensorType::Q5_0, TensorType::Q5_1,
                             TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K, TensorType::Q3_K,
                             TensorType::Q4_K,   TensorType::Q5_K,  TensorType::Q6_K, TensorType::IQ4_XS};

TEST(Panels, PackKeepsEveryByteAndLeavesTheTailRowMajor) {
  std::mt19937 rng(1);
  for (const TensorType t : kTypes) {
    SCOPED_TRACE(tensor_type_name(t));
    const size_t n = 3 * size_t(block_elems(t)), rb = row_bytes(t, n);
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
}

// Tokens first .. first + k - 1 against a panel: the reference kernel and
// panel_dot on every SIMD target (the AVX-512 VNNI kernels where the CPU has
// them, the reference elsewhere) equal vec_dot on the original rows.
void expect_panel_matches(TensorType t, const std::vector<uint8_t>& rows, const std::vector<uint8_t>& panel,
                          const std::vector<uint8_t>& x, const PanelActivations& a, int first, int k) {
  const size_t n = a.nb * size_t(block_elems(t)), rb = row_bytes(t, n), xb = a.row_stride;
  const size_t stride = kPanelRows + 3;
  auto check = [&](const std::vector<float>& got, const char* what) {
    for (int j = 0; j < k; ++j)
      for (int r = 0; r < kPanelRows; ++r) {
        const float want = vec_dot(t, rows.data() + size_t(r) * rb, x.data() + size_t(first + j) * xb, n);
        ASSERT_EQ(got[size_t(j) * stride + size_t(r)], want)
            << what << " " << tensor_type_name(t) << " n " << n << " tokens " << first << "+" << k << " token " << j
            << " row " << r;
      }
    EXPECT_EQ(got[kPanelRows], -1.0f);  // nothing written past the panel's rows
  };
  std::vector<float> out(size_t(k) * stride, -1.0f);
  panel_dot_reference(t, panel.data(), a, first, k, out.data(), stride);
  check(out, "reference");
  testing::for_each_simd_target([&](int64_t) {
    std::fill(out.begin(), out.end(), -1.0f);
    panel_dot(t, panel.data(), a, first, k, out.data(), stride);
    check(out, "panel_dot");
  });
}

TEST(Panels, KernelsMatchVecDotBitForBit) {
  std::mt19937 rng(2);
  for (const TensorType t : kTypes)
    for (const size_t blocks : {1, 3, 8})
      for (const bool extreme : {false, true}) {
        const TensorType xt = activation_type(t);
        const size_t n = blocks * size_t(block_elems(t)), rb = row_bytes(t, n), xb = row_bytes(xt, n);
        const auto rows = testing::random_blocks(t, n * kPanelRows, rng);
        auto panel = rows;
        pack_panels(t, panel.data(), rb, kPanelRows);
        const auto x = activations(xt, n, kPanelTokensMax + 3, rng, extreme);
        PanelActivations a;
        prepare_panel_activations(t, x.data(), xb, kPanelTokensMax + 3, blocks, a);
        for (const int first : {0, 3})
          for (int k = 1; k <= kPanelTokensMax; ++k) expect_panel_matches(t, rows, panel, x, a, first, k);
      }
}

// MXFP4's scales are rebuilt from the E8M0 bytes in the panel kernels:
// rows of one block, one for every byte 0..255 (subnormal and near-overflow
// scales included), against tokens whose scales run from 1e-8 to 1e3 so
// that each exponent meets products that neither vanish nor overflow; equal
// to vec_dot on the rows (or both NaN).
TEST(Panels, Mxfp4EveryExponentMatchesVecDot) {
  std::mt19937 rng(3);
  const TensorType t = TensorType::MXFP4;
  const size_t rb = sizeof(BlockMXFP4), xb = sizeof(BlockQ8_0);
  auto rows = testing::random_blocks(t, 256 * kQK, rng);
  for (size_t r = 0; r < 256; ++r) rows[r * rb] = uint8_t(r);
  auto panels = rows;
  pack_panels(t, panels.data(), rb, 256);
  std::vector<uint8_t> x;
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int k = 0; k < kPanelTokensMax; ++k) {
    std::vector<float> v(kQK);
    for (auto& f : v) f = g(rng) * std::pow(10.0f, -8.0f + 1.6f * float(k));
    const auto q = quantize(TensorType::Q8_0, v.data(), kQK);
    x.insert(x.end(), q.begin(), q.end());
  }
  PanelActivations a;
  prepare_panel_activations(t, x.data(), xb, kPanelTokensMax, 1, a);
  testing::for_each_simd_target([&](int64_t) {
    for (size_t p = 0; p < 256 / kPanelRows; ++p) {
      float out[kPanelTokensMax * kPanelRows];
      panel_dot(t, panels.data() + p * kPanelRows * rb, a, 0, kPanelTokensMax, out, kPanelRows);
      for (int k = 0; k < kPanelTokensMax; ++k)
        for (int r = 0; r < kPanelRows; ++r) {
          const size_t row = p * kPanelRows + size_t(r);
          const float got = out[k * kPanelRows + r], want = vec_dot(t, rows.data() + row * rb, x.data() + k * xb, kQK);
          ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
              << "exponent " << row << " token " << k << ": " << got << " vs " << want << " on " << dot_simd_target();
        }
    }
  });
}

// Panels side by side (decode's read streams) give what panel_dot gives for
// each, on every SIMD target, for every count of streams.
TEST(Panels, PanelsSideBySideMatchPanelDot) {
  std::mt19937 rng(4);
  for (const TensorType t : kTypes)
    for (const size_t blocks : {1, 3, 8})
      for (const bool extreme : {false, true}) {
        const TensorType xt = activation_type(t);
        const size_t n = blocks * size_t(block_elems(t)), rb = row_bytes(t, n), xb = row_bytes(xt, n);
        auto rows = testing::random_blocks(t, n * kPanelStreamsMax * kPanelRows, rng);
        pack_panels(t, rows.data(), rb, kPanelStreamsMax * kPanelRows);
        const auto x = activations(xt, n, 3, rng, extreme);
        PanelActivations a;
        prepare_panel_activations(t, x.data(), xb, 3, blocks, a);
        testing::for_each_simd_target([&](int64_t) {
          for (int streams = 1; streams <= kPanelStreamsMax; ++streams)
            for (int token = 0; token < 3; ++token) {
              const uint8_t* panels[kPanelStreamsMax];
              float got[kPanelStreamsMax][kPanelRows], want[kPanelRows];
              float* outs[kPanelStreamsMax];
              for (int s = 0; s < streams; ++s) {
                panels[s] = rows.data() + size_t((streams - 1 - s) * kPanelRows) * rb;  // any order
                outs[s] = got[s];
              }
              panel_dot_streams(t, panels, streams, a, token, outs);
              for (int s = 0; s < streams; ++s) {
                panel_dot(t, panels[s], a, token, 1, want, kPanelRows);
                for (int r = 0; r < kPanelRows; ++r)
                  ASSERT_EQ(got[s][r], want[r]) << tensor_type_name(t) << " blocks " << blocks << " streams " << streams
                                                << " panel " << s << " token " << token << " row " << r;
              }
            }
        });
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
  EXPECT_THROW(panel_dot(TensorType::Q4_K, panel.data(), a, 0, 1, out, kPanelRows), InvalidArgument);
  const uint8_t* panels[kPanelStreamsMax + 1] = {panel.data(), panel.data()};
  float* outs[kPanelStreamsMax + 1] = {out, out};
  EXPECT_THROW(panel_dot_streams(TensorType::Q8_0, panels, 2, a, 1, outs), InvalidArgument);
  EXPECT_THROW(panel_dot_streams(TensorType::Q4_0, panels, 2, a, 0, outs), InvalidArgument);
  EXPECT_THROW(panel_dot_streams(TensorType::Q8_0, panels, 0, a, 0, outs), InvalidArgument);
  EXPECT_THROW(panel_dot_streams(TensorType::Q8_0, panels, kPanelStreamsMax + 1, a, 0, outs), InvalidArgument);
}

}  // namespace
}  // namespace pagoda
