// The float SIMD kernels against their scalar references, on every SIMD
// target this CPU runs: decoding bit for bit, dots with the fixed summation
// shape (bit for bit where the target fuses multiply-add, which every x86
// target Pagoda builds does), and the tile kernels equal to one dot per
// output whatever the block shape or edge.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/float_kernels.h"
#include "quant/rows.h"
#include "simd_targets.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return h;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<size_t> lengths() {
  std::vector<size_t> n;
  for (size_t i = 1; i <= 70; ++i) n.push_back(i);
  for (size_t i : {2048, 5632 + 3}) n.push_back(i);
  return n;
}

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
      if (testing::target_fuses_multiply_add(target)) EXPECT_EQ(bits(got), bits(want)) << n;
      else EXPECT_NEAR(got, want, 1e-5 * std::sqrt(double(n))) << n;
      const auto h = to_f16(a);
      const float got16 = dot_f16_f32(h.data(), b.data(), n), want16 = dot_f16_f32_scalar(h.data(), b.data(), n);
      if (testing::target_fuses_multiply_add(target)) EXPECT_EQ(bits(got16), bits(want16)) << n;
      else EXPECT_NEAR(got16, want16, 1e-5 * std::sqrt(double(n))) << n;
      double exact = 0;
      for (size_t i = 0; i < n; ++i) exact += double(a[i]) * b[i];
      EXPECT_NEAR(dot_f32(a.data(), b.data(), n), exact, 1e-5 * std::sqrt(double(n)) * 4) << n;
    }
  });
}

TEST(SimdFloat, SoftmaxMatchesDoublePrecisionAndIsTheSameOnEveryFmaTarget) {
  std::vector<std::vector<float>> fma_results;
  testing::for_each_simd_target([&](int64_t target) {
    std::vector<float> all;
    for (size_t n : lengths()) {
      auto x = random_floats(n, uint32_t(n) + 7, 30.0f);  // wide: most weights underflow towards 0
      x[n / 2] = -1e30f;                                    // a hopeless position
      const auto in = x;
      softmax_scaled(x.data(), n, 0.125f);
      double max = -INFINITY, sum = 0;
      for (float v : in) max = std::max(max, 0.125 * v);
      for (float v : in) sum += std::exp(0.125 * v - max);
      double total = 0;
      for (size_t i = 0; i < n; ++i) {
        const double arg = 0.125 * in[i] - max, want = std::exp(arg) / sum;
        // x - max is rounded to float: a relative error of ~|x - max| * 2^-24 in the weight.
        ASSERT_NEAR(x[i], want, want * 2e-7 * (4 + std::fabs(arg)) + 1e-37) << n << " at " << i;
        total += x[i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5) << n;
      all.insert(all.end(), x.begin(), x.end());
    }
    if (testing::target_fuses_multiply_add(target)) fma_results.push_back(all);
  });
  for (const auto& r : fma_results) EXPECT_EQ(0, std::memcmp(r.data(), fma_results[0].data(), r.size() * sizeof(float)));
}

TEST(SimdFloat, SwiGluMatchesDoublePrecisionAndIsTheSameOnEveryFmaTarget) {
  std::vector<std::vector<float>> fma_results;
  testing::for_each_simd_target([&](int64_t target) {
    std::vector<float> all;
    for (size_t n : lengths()) {
      auto gate = random_floats(n, uint32_t(n) + 11, 8.0f);
      const auto up = random_floats(n, uint32_t(n) + 12);
      // The ends of exp's range and past them: silu(-200) is -0, silu(200) is 200.
      const float edges[] = {-200.0f, -104.0f, -100.0f, -88.0f, 88.0f, 200.0f, 0.0f, -0.0f};
      for (size_t i = 0; i < std::min(n, std::size(edges)); ++i) gate[(i * 7) % n] = edges[i];
      const auto in = gate;
      swiglu_simd(gate.data(), up.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const double g = in[i], want = g / (1.0 + std::exp(-g)) * up[i];
        // Three roundings (exp, the division, the product) and exp's few ULP.
        ASSERT_NEAR(gate[i], want, std::fabs(want) * 1e-6 + 1e-37) << n << " at " << i << ", gate " << g;
      }
      all.insert(all.end(), gate.begin(), gate.end());
    }
    if (testing::target_fuses_multiply_add(target)) fma_results.push_back(all);
  });
  for (const auto& r : fma_results) EXPECT_EQ(0, std::memcmp(r.data(), fma_results[0].data(), r.size() * sizeof(float)));
}

TEST(SimdFloat, SwiGluOfNanIsNan) {
  float gate[3] = {NAN, 1.0f, -NAN}, up[3] = {1.0f, NAN, 2.0f};
  swiglu_simd(gate, up, 3);
  for (float g : gate) EXPECT_TRUE(std::isnan(g));
}

// K/V rows of one KV head scattered over blocks of a pool, as the paged KV
// cache holds them: `block` positions a block, kLd elements between
// positions (other heads' elements between), the head at `offset`, the
// blocks in a shuffled order.
template <class Elem>
struct PagedPool {
  static constexpr size_t kLd = 3 * 48 + 16;  // 160 >= offset + head size below
  size_t block;
  std::vector<Elem> pool;
  std::vector<const void*> blocks;
  PagedPool(size_t n, size_t block_size, size_t offset, uint32_t seed) : block(block_size) {
    const size_t n_blocks = (n + block - 1) / block;
    const auto values = random_floats(n_blocks * block * kLd, seed);
    pool.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<Elem, float>) pool[i] = values[i];
      else pool[i] = f32_to_f16(values[i]);
    }
    std::vector<size_t> order(n_blocks);
    for (size_t b = 0; b < n_blocks; ++b) order[b] = b;
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    for (size_t b : order) blocks.push_back(pool.data() + b * block * kLd + offset);
  }
  PagedRows rows() const {
    return PagedRows{std::is_same_v<Elem, float> ? TensorType::F32 : TensorType::F16, blocks.data(), block, kLd};
  }
  const Elem* row(size_t p) const { return static_cast<const Elem*>(blocks[p / block]) + (p % block) * kLd; }
};

float dot_row(const float* k, const float* q, size_t n) { return dot_f32(k, q, n); }
float dot_row(const uint16_t* k, const float* q, size_t n) { return dot_f16_f32(k, q, n); }
void axpy_row(float a, const float* v, float* y, size_t n) { axpy_f32(a, v, y, n); }
void axpy_row(float a, const uint16_t* v, float* y, size_t n) { axpy_f16(a, v, y, n); }

// Scores equal one dot per (head, position) and values one axpy per
// position, bit for bit, for every head size the kernels take, group size
// and length (partial blocks and groups of 16 included), F32 and F16 rows.
template <class Elem>
void check_attention_kernels() {
  // Blocks of 16 (the engine's), and of 8 and 24, whose groups of 16
  // positions straddle blocks.
  for (size_t block : {16, 8, 24})
    for (size_t hd : {16, 48, 64, 128})
      for (size_t n_q : {1, 3, 4, 7, 8})
        for (size_t n : {1, 15, 16, 17, 40, 70}) {
          const uint32_t seed = uint32_t(block * 100000 + hd * 1000 + n_q * 100 + n);
          const PagedPool<Elem> k(n, block, 16, seed), v(n, block, 0, seed + 1);
          const auto q = random_floats(n_q * hd, seed + 2);
          const size_t ld_s = n + 3;
          std::vector<float> scores(n_q * ld_s, -1.0f);
          attend_scores(q.data(), n_q, hd, k.rows(), n, scores.data(), ld_s);
          for (size_t h = 0; h < n_q; ++h) {
            for (size_t p = 0; p < n; ++p)
              ASSERT_EQ(bits(scores[h * ld_s + p]), bits(dot_row(k.row(p), q.data() + h * hd, hd)))
                  << "block " << block << " hd " << hd << " heads " << n_q << " n " << n << " head " << h << " position " << p;
            for (size_t p = n; p < ld_s; ++p) ASSERT_EQ(scores[h * ld_s + p], -1.0f) << "wrote past n";
          }
          const auto w = random_floats(n_q * ld_s, seed + 3);
          std::vector<float> out(n_q * hd, 5.0f), want(n_q * hd, 0.0f);
          attend_values(w.data(), ld_s, n_q, v.rows(), n, out.data(), hd);
          for (size_t h = 0; h < n_q; ++h)
            for (size_t p = 0; p < n; ++p) axpy_row(w[h * ld_s + p], v.row(p), want.data() + h * hd, hd);
          ASSERT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)))
              << "block " << block << " hd " << hd << " heads " << n_q << " n " << n;
        }
}

TEST(SimdFloat, AttentionKernelsEqualOneDotAndOneAxpyPerRow) {
  testing::for_each_simd_target([&](int64_t) {
    check_attention_kernels<float>();
    check_attention_kernels<uint16_t>();
  });
}

TEST(SimdFloat, AttentionKernelsTakeWholeVectorsUpTo128) {
  EXPECT_TRUE(attend_kernels_take(64));
  EXPECT_TRUE(attend_kernels_take(128));
  EXPECT_FALSE(attend_kernels_take(8));   // stories260K's heads
  EXPECT_FALSE(attend_kernels_take(72));
  EXPECT_FALSE(attend_kernels_take(256));
  float q[8] = {}, s[1];
  const PagedRows none;
  EXPECT_THROW(attend_scores(q, 1, 8, none, 1, s, 1), InvalidArgument);
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
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0}) {
      for (size_t n : {size_t(32), size_t(64), size_t(96), size_t(2048), size_t(5632)}) {
        const auto src = random_floats(n, uint32_t(n) * 3, 3.0f);
        const auto q = quantize(t, src.data(), n);
        std::vector<float> ref(n), got(n, 123.0f);
        dequantize_row(t, q.data(), ref.data(), n);
        dequantize_row_simd(t, q.data(), got.data(), n);
        ASSERT_EQ(std::memcmp(ref.data(), got.data(), n * 4), 0) << tensor_type_name(t) << " " << n;
      }
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
