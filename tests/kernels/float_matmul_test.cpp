// The float matmul kernels against their scalar references, on every SIMD
// target this CPU runs: decoding bit for bit, dots with the fixed summation
// shape (bit for bit where the target fuses multiply-add, which every x86
// target Pagoda builds does), and the tile kernels equal to one dot per
// output whatever the block shape or edge.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "float_test_data.h"
#include "kernels/float_matmul.h"
#include "quant/blocks.h"
#include "quant/rows.h"
#include "simd_targets.h"
#include "util/half.h"

namespace pagoda {
namespace {

// (From tests/quant/rows_test.cpp, with dot_f32; random_floats(n, seed, 2.0f)
// draws the same values as its random_row.)
TEST(Rows, DotMatchesDoubleSum) {
  for (size_t n : {1u, 7u, 8u, 9u, 64u, 1000u}) {
    const auto a = random_floats(n, 11, 2.0f), b = random_floats(n, 12, 2.0f);
    double ref = 0;
    for (size_t i = 0; i < n; ++i) ref += double(a[i]) * b[i];
    EXPECT_NEAR(dot_f32(a.data(), b.data(), n), ref, 1e-4 * std::sqrt(double(n)) * 4);
  }
}

TEST(SimdFloat, DotMatchesScalarReference) {
  testing::for_each_simd_target([&](int64_t target) {
    for (size_t n : lengths()) {
      const auto a = random_floats(n, uint32_t(n)), b = random_floats(n, uint32_t(n) + 1000);
      const float got = dot_f32(a.data(), b.data(), n), want = dot_f32_scalar(a.data(), b.data(), n);
      if (testing::target_fuses_multiply_add(target))
        EXPECT_EQ(bits(got), bits(want)) << n;
      else
        EXPECT_NEAR(got, want, 1e-5 * std::sqrt(double(n))) << n;
      const auto h = to_f16(a);
      const float got16 = dot_f16_f32(h.data(), b.data(), n), want16 = dot_f16_f32_scalar(h.data(), b.data(), n);
      if (testing::target_fuses_multiply_add(target))
        EXPECT_EQ(bits(got16), bits(want16)) << n;
      else
        EXPECT_NEAR(got16, want16, 1e-5 * std::sqrt(double(n))) << n;
      double exact = 0;
      for (size_t i = 0; i < n; ++i) exact += double(a[i]) * b[i];
      EXPECT_NEAR(dot_f32(a.data(), b.data(), n), exact, 1e-5 * std::sqrt(double(n)) * 4) << n;
    }
  });
}

TEST(SimdFloat, DotOfF16EqualsDotOfDecodedRow) {
  testing::for_each_simd_target([&](int64_t target) {
    for (size_t n : lengths()) {
      const auto h = to_f16(random_floats(n, uint32_t(n) + 7));
      const auto b = random_floats(n, uint32_t(n) + 8);
      std::vector<float> a(n);
      dequantize_row(TensorType::F16, h.data(), a.data(), n);
      EXPECT_EQ(bits(dot_f16_f32(h.data(), b.data(), n)), bits(dot_f32(a.data(), b.data(), n))) << n;
    }
  });
}

TEST(SimdFloat, AxpyIsOneFmaPerElement) {
  testing::for_each_simd_target([&](int64_t target) {
    for (size_t n : lengths()) {
      const auto x = random_floats(n, uint32_t(n)), y0 = random_floats(n, uint32_t(n) + 3);
      const auto h = to_f16(x);
      auto y = y0, yh = y0;
      axpy_f32(0.37f, x.data(), y.data(), n);
      axpy_f16(-1.25f, h.data(), yh.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const float want = std::fma(0.37f, x[i], y0[i]), want16 = std::fma(-1.25f, f16_to_f32(h[i]), y0[i]);
        if (testing::target_fuses_multiply_add(target)) {
          ASSERT_EQ(bits(y[i]), bits(want)) << n << " " << i;
          ASSERT_EQ(bits(yh[i]), bits(want16)) << n << " " << i;
        } else {
          ASSERT_NEAR(y[i], want, 1e-6f) << n << " " << i;
          ASSERT_NEAR(yh[i], want16, 1e-6f) << n << " " << i;
        }
      }
    }
  });
}

TEST(SimdFloat, AxpyRowsEqualsOneAxpyPerRow) {
  testing::for_each_simd_target([&](int64_t) {
    for (size_t n : {size_t(1), size_t(16), size_t(37), size_t(64), size_t(128)}) {
      const size_t rows = 11, ld = n + 5;
      const auto x = random_floats(rows * ld, uint32_t(n)), y0 = random_floats(n, uint32_t(n) + 3);
      const auto a = random_floats(rows, uint32_t(n) + 7);
      const auto h = to_f16(x);
      auto y = y0, yh = y0, want = y0, want16 = y0;
      axpy_rows_f32(a.data(), x.data(), ld, rows, y.data(), n);
      axpy_rows_f16(a.data(), h.data(), ld, rows, yh.data(), n);
      for (size_t r = 0; r < rows; ++r) {
        axpy_f32(a[r], x.data() + r * ld, want.data(), n);
        axpy_f16(a[r], h.data() + r * ld, want16.data(), n);
      }
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits(y[i]), bits(want[i])) << n << " " << i;
        ASSERT_EQ(bits(yh[i]), bits(want16[i])) << n << " " << i;
      }
    }
  });
}

TEST(SimdFloat, DequantizeMatchesScalarBitForBit) {
  testing::for_each_simd_target([&](int64_t target) {
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::MXFP4}) {
      for (size_t n : {size_t(32), size_t(64), size_t(96), size_t(2048), size_t(5632)}) {
        const auto src = random_floats(n, uint32_t(n) * 3, 3.0f);
        const auto q = quantize(t, src.data(), n);
        std::vector<float> ref(n), got(n, 123.0f);
        dequantize_row(t, q.data(), ref.data(), n);
        dequantize_row_simd(t, q.data(), got.data(), n);
        ASSERT_EQ(std::memcmp(ref.data(), got.data(), n * 4), 0) << tensor_type_name(t) << " " << n;
      }
    }
    // MXFP4: every exponent byte (subnormal scales, products past the largest
    // float) with random codes.
    {
      std::mt19937 rng(5);
      std::vector<uint8_t> q(256 * sizeof(BlockMXFP4));
      for (auto& b : q) b = uint8_t(rng());
      for (size_t e = 0; e < 256; ++e) q[e * sizeof(BlockMXFP4)] = uint8_t(e);
      std::vector<float> ref(256 * kQK), got(256 * kQK);
      dequantize_row(TensorType::MXFP4, q.data(), ref.data(), ref.size());
      dequantize_row_simd(TensorType::MXFP4, q.data(), got.data(), got.size());
      ASSERT_EQ(std::memcmp(ref.data(), got.data(), got.size() * 4), 0) << "MXFP4 exponents";
    }
    // Odd lengths of the float types, and special F16 values (subnormals, inf).
    for (size_t n : lengths()) {
      std::vector<uint16_t> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = uint16_t((i * 2654435761u) >> 7) & 0x7bff;  // no nan
      if (n > 3) h[0] = 0x0001, h[1] = 0x83ff, h[2] = 0x7c00;
      for (TensorType t : {TensorType::F16, TensorType::BF16}) {
        std::vector<float> ref(n), got(n);
        dequantize_row(t, h.data(), ref.data(), n);
        dequantize_row_simd(t, h.data(), got.data(), n);
        ASSERT_EQ(std::memcmp(ref.data(), got.data(), n * 4), 0) << tensor_type_name(t) << " " << n;
      }
    }
  });
}

// Every output of the tile kernel equals dot_f32 of its row and token, for
// row and token counts that cover every block shape and edge.
TEST(SimdFloat, TileEqualsOneDotPerOutput) {
  testing::for_each_simd_target([&](int64_t target) {
    for (size_t cols : {size_t(5), size_t(16), size_t(37), size_t(64), size_t(288)}) {
      const size_t max_rows = 13, max_tokens = 14;
      const auto w = random_floats(max_rows * cols, uint32_t(cols));
      const auto x = random_floats(max_tokens * cols, uint32_t(cols) + 1);
      for (size_t n_rows = 1; n_rows <= max_rows; ++n_rows)
        for (size_t n_tokens = 1; n_tokens <= max_tokens; ++n_tokens) {
          const size_t ldy = n_rows + 2;
          std::vector<float> y(n_tokens * ldy, -7.0f);
          matmul_rows_fused(TensorType::F32, w.data(), cols * 4, n_rows, x.data(), cols, n_tokens, cols, y.data(), ldy);
          for (size_t t = 0; t < n_tokens; ++t)
            for (size_t r = 0; r < ldy; ++r) {
              const float want = r < n_rows ? dot_f32(w.data() + r * cols, x.data() + t * cols, cols) : -7.0f;
              ASSERT_EQ(bits(y[t * ldy + r]), bits(want)) << cols << " " << n_rows << " " << n_tokens;
            }
        }
    }
  });
}

// Large tiles: more rows than the kernel takes at a time, token blocks, rows
// walked in chunks (the accumulators saved between them), a tail after the
// last chunk; F32 and F16 rows.
TEST(SimdFloat, ChunkedTileEqualsOneDotPerOutput) {
  testing::for_each_simd_target([&](int64_t target) {
    for (size_t cols : {size_t(512), size_t(2048 + 5)}) {
      const size_t n_rows = 70, n_tokens = 53;
      const auto w = random_floats(n_rows * cols, uint32_t(cols) + 11);
      std::vector<uint16_t> w16(w.size());
      for (size_t i = 0; i < w.size(); ++i) w16[i] = f32_to_f16(w[i]);
      const auto x = random_floats(n_tokens * cols, uint32_t(cols) + 12);
      for (size_t nt : {size_t(1), size_t(7), n_tokens}) {
        std::vector<float> y(nt * n_rows), y16(nt * n_rows);
        matmul_rows_fused(TensorType::F32, w.data(), cols * 4, n_rows, x.data(), cols, nt, cols, y.data(), n_rows);
        matmul_rows_fused(TensorType::F16, w16.data(), cols * 2, n_rows, x.data(), cols, nt, cols, y16.data(), n_rows);
        for (size_t t = 0; t < nt; ++t)
          for (size_t r = 0; r < n_rows; ++r) {
            const float* xt = x.data() + t * cols;
            ASSERT_EQ(bits(y[t * n_rows + r]), bits(dot_f32(w.data() + r * cols, xt, cols)))
                << cols << " " << nt << " " << t << " " << r;
            ASSERT_EQ(bits(y16[t * n_rows + r]), bits(dot_f16_f32(w16.data() + r * cols, xt, cols)))
                << cols << " " << nt << " " << t << " " << r;
          }
      }
    }
  });
}

// The kernel decodes in registers exactly as dequantize_row does.
TEST(SimdFloat, FusedEqualsDecodedRows) {
  testing::for_each_simd_target([&](int64_t target) {
    for (TensorType t : {TensorType::F16, TensorType::BF16}) {
      for (size_t cols : {size_t(32), size_t(96), size_t(2048)}) {
        const size_t n_rows = 11, n_tokens = 8;
        const auto src = random_floats(n_rows * cols, uint32_t(cols) + 5, 0.1f);
        const size_t rb = row_bytes(t, cols);
        std::vector<uint8_t> w(n_rows * rb);
        for (size_t r = 0; r < n_rows; ++r) quantize_row(t, src.data() + r * cols, w.data() + r * rb, cols);
        std::vector<float> decoded(n_rows * cols);
        for (size_t r = 0; r < n_rows; ++r) dequantize_row(t, w.data() + r * rb, decoded.data() + r * cols, cols);
        const auto x = random_floats(n_tokens * cols, uint32_t(cols) + 6);
        for (size_t nt = 1; nt <= n_tokens; ++nt) {
          std::vector<float> y(nt * n_rows), yf(nt * n_rows);
          matmul_rows_fused(TensorType::F32, decoded.data(), cols * 4, n_rows, x.data(), cols, nt, cols, y.data(),
                            n_rows);
          matmul_rows_fused(t, w.data(), rb, n_rows, x.data(), cols, nt, cols, yf.data(), n_rows);
          ASSERT_EQ(std::memcmp(y.data(), yf.data(), y.size() * 4), 0) << tensor_type_name(t) << " " << cols;
        }
      }
    }
  });
}

}  // namespace
}  // namespace pagoda
