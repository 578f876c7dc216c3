// The SIMD dot kernels (kernels/quant_dot.h) against the scalar ones of
// quant/dot.h, bit for bit, on every SIMD target this CPU runs: random block
// bytes (every code, scale and min a format can hold), quantized Gaussian
// rows, extreme blocks, every length of 1..9 blocks and the model's widths,
// and 1..4 weight rows by 1..8 activation rows at once.
#include <gtest/gtest.h>

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

const TensorType kTypes[] = {TensorType::Q8_0,   TensorType::Q4_0,  TensorType::Q5_0, TensorType::Q5_1,
                             TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K, TensorType::Q3_K,
                             TensorType::Q4_K,   TensorType::Q5_K,  TensorType::Q6_K, TensorType::IQ4_XS};

float scalar_dot(TensorType t, const void* w, const void* x, size_t n) { return vec_dot_scalar(t, w, x, n); }

// Equal, or both NaN (MXFP4's largest exponents take sums to Inf - Inf).
bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// kDotTokensMax activation rows of n elements quantized to xt, one after another.
std::vector<uint8_t> random_activations(TensorType xt, size_t n, std::mt19937& rng, bool extreme) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n);
  std::vector<uint8_t> out;
  for (int k = 0; k < kDotTokensMax; ++k) {
    for (auto& v : x) v = extreme ? (rng() % 2 ? 1.0f : -1.0f) : g(rng);  // extreme: every code +-127
    if (!extreme) x[rng() % n] *= 30.0f;
    const auto q = quantize(xt, x.data(), n);
    out.insert(out.end(), q.begin(), q.end());
  }
  return out;
}

// wq holds kDotRowsMax weight rows (or one, reused), xq kDotTokensMax activation rows.
void expect_matches_scalar(TensorType t, const std::vector<uint8_t>& wq, const std::vector<uint8_t>& xq, size_t n) {
  const size_t x_stride = row_bytes(activation_type(t), n);
  const size_t w_stride = wq.size() == row_bytes(t, n) ? 0 : row_bytes(t, n);
  for (int n_w = 1; n_w <= kDotRowsMax; ++n_w)
    for (int n_x = 1; n_x <= kDotTokensMax; ++n_x) {
      float got[kDotTokensMax * (kDotRowsMax + 1)];
      const size_t out_stride = kDotRowsMax + 1;
      vec_dot_tile(t, wq.data(), w_stride, n_w, xq.data(), x_stride, n_x, n, got, out_stride);
      for (int k = 0; k < n_x; ++k)
        for (int r = 0; r < n_w; ++r) {
          const float want = scalar_dot(t, wq.data() + r * w_stride, xq.data() + k * x_stride, n);
          ASSERT_PRED2(same, got[k * out_stride + r], want)
              << tensor_type_name(t) << " n=" << n << " tile " << n_w << "x" << n_x << " at " << r << "," << k << " on "
              << dot_simd_target();
        }
    }
  EXPECT_PRED2(same, vec_dot(t, wq.data(), xq.data(), n), scalar_dot(t, wq.data(), xq.data(), n));
}

std::vector<size_t> lengths(TensorType t) {
  std::vector<size_t> v;
  for (size_t b = 1; b <= 9; ++b) v.push_back(b * block_elems(t));
  v.push_back(2048);
  v.push_back(5632);
  v.push_back(70 * block_elems(t));  // more than one chunk of blocks (kChunkBlocks = 64) in the kernels
  return v;
}

// Runs body once per SIMD target this CPU supports (the fallback included),
// and on AVX-512 with each of the two Q4_K kernels (256- and 512-bit).
template <class Body>
void for_each_target(Body body) {
  const bool wide_default = q4k_wide_vectors();
  testing::for_each_simd_target([&](int64_t target) {
    EXPECT_STREQ(dot_simd_target(), hwy::TargetName(target));
    for (bool wide : {false, true}) {
      SCOPED_TRACE(wide ? "512-bit Q4_K" : "256-bit Q4_K");
      set_q4k_wide_vectors(wide);
      body();
    }
  });
  set_q4k_wide_vectors(wide_default);
}

TEST(DotSimd, MatchesScalarOnRandomBlockBytes) {
  for_each_target([] {
    std::mt19937 rng{7};
    for (TensorType t : kTypes)
      for (size_t n : lengths(t)) {
        const auto wq = testing::random_blocks(t, kDotRowsMax * n, rng);
        expect_matches_scalar(t, wq, random_activations(activation_type(t), n, rng, false), n);
        expect_matches_scalar(t, wq, random_activations(activation_type(t), n, rng, true), n);
      }
  });
}

TEST(DotSimd, MatchesScalarOnQuantizedRows) {
  for_each_target([] {
    std::mt19937 rng{11};
    std::normal_distribution<float> g(0.0f, 0.05f);
    for (TensorType t : kTypes)
      for (size_t n : lengths(t)) {
        std::vector<float> w(kDotRowsMax * n);
        for (auto& v : w) v = g(rng);
        expect_matches_scalar(t, quantize(t, w.data(), w.size()), random_activations(activation_type(t), n, rng, false),
                              n);
      }
  });
}

// Every code at its largest (and Q8_0 at -128), the largest scales and mins,
// activations all +-127: the integer sums at their extremes.
TEST(DotSimd, MatchesScalarOnExtremeBlocks) {
  for_each_target([] {
    std::mt19937 rng{13};
    for (TensorType t : kTypes)
      for (uint8_t fill : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(0x7F)}) {
        const size_t n = 4 * kQKK;
        std::vector<uint8_t> wq = testing::random_blocks(t, n, rng);
        const size_t nb = n / block_elems(t), bb = row_bytes(t, block_elems(t));
        const auto halves = testing::half_fields(t), exponents = testing::e8m0_fields(t);
        for (size_t b = 0; b < nb; ++b) {
          uint8_t* blk = wq.data() + b * bb;
          std::vector<uint8_t> keep;  // the F16 and E8M0 scales; every other byte (codes, scales, mins) is `fill`
          for (size_t at : halves) keep.insert(keep.end(), blk + at, blk + at + 2);
          for (size_t at : exponents) keep.push_back(blk[at]);
          std::memset(blk, fill, bb);
          for (size_t i = 0; i < halves.size(); ++i) std::memcpy(blk + halves[i], &keep[2 * i], 2);
          for (size_t i = 0; i < exponents.size(); ++i) blk[exponents[i]] = keep[2 * halves.size() + i];
        }
        expect_matches_scalar(t, wq, random_activations(activation_type(t), n, rng, true), n);
      }
  });
}

TEST(DotSimd, TokenGroupsMatchScalar) {
  for_each_target([] {
    std::mt19937 rng{13};
    for (TensorType t : kTypes)
      for (size_t n : lengths(t)) {
        const TensorType xt = activation_type(t);
        const auto wq = testing::random_blocks(t, kDotRowsMax * n, rng);
        const size_t w_stride = row_bytes(t, n);
        auto xq = random_activations(xt, n, rng, false);  // 2 x kDotTokensMax rows
        const auto more = random_activations(xt, n, rng, true);
        xq.insert(xq.end(), more.begin(), more.end());
        const size_t x_stride = row_bytes(xt, n);
        for (int n_tokens : {1, 5, 8, kGroupTokens}) {
          const size_t first = n_tokens < kGroupTokens ? 1 : 0;  // not always the buffer's start
          TokenGroup g;
          prepare_token_group(xt, xq.data() + first * x_stride, x_stride, n_tokens, n / block_elems(t), g);
          for (int n_rows = 1; n_rows <= kDotRowsMax; ++n_rows) {
            float got[kDotRowsMax * kGroupTokens];
            token_group_dot(t, wq.data(), w_stride, n_rows, g, got);
            for (int r = 0; r < n_rows; ++r)
              for (int k = 0; k < n_tokens; ++k)
                ASSERT_PRED2(
                    same, got[kGroupTokens * r + k],
                    scalar_dot(t, wq.data() + size_t(r) * w_stride, xq.data() + (first + size_t(k)) * x_stride, n))
                    << tensor_type_name(t) << " n=" << n << " row " << r << " of " << n_rows << " token " << k << " of "
                    << n_tokens << " on " << dot_simd_target();
          }
        }
      }
  });
}

// MXFP4 blocks of every exponent byte (subnormal scales at 0 and 1, 2^127
// at 255), rows of one block so no other block hides a wrong scale, against
// tokens whose scales run from 1e-8 to 1e3 (each exponent meets products
// that neither vanish nor overflow), through the tiles and token groups.
TEST(DotSimd, Mxfp4EveryExponentMatchesScalar) {
  for_each_target([] {
    std::mt19937 rng{19};
    const TensorType t = TensorType::MXFP4;
    const size_t rb = sizeof(BlockMXFP4), xb = sizeof(BlockQ8_0);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<uint8_t> xq;
    for (int k = 0; k < kDotTokensMax; ++k) {
      std::vector<float> v(kQK);
      for (auto& f : v) f = g(rng) * std::pow(10.0f, -8.0f + 1.6f * float(k));
      const auto q = quantize(TensorType::Q8_0, v.data(), kQK);
      xq.insert(xq.end(), q.begin(), q.end());
    }
    TokenGroup group;
    prepare_token_group(TensorType::Q8_0, xq.data(), xb, kDotTokensMax, 1, group);
    for (int e0 = 0; e0 < 256; e0 += kDotRowsMax) {
      auto wq = testing::random_blocks(t, kDotRowsMax * kQK, rng);
      for (int r = 0; r < kDotRowsMax; ++r) wq[size_t(r) * rb] = uint8_t(e0 + r);
      expect_matches_scalar(t, wq, xq, kQK);
      float got[kDotRowsMax * kGroupTokens];
      token_group_dot(t, wq.data(), rb, kDotRowsMax, group, got);
      for (int r = 0; r < kDotRowsMax; ++r)
        for (int k = 0; k < kDotTokensMax; ++k)
          ASSERT_PRED2(same, got[kGroupTokens * r + k], scalar_dot(t, wq.data() + r * rb, xq.data() + k * xb, kQK))
              << "exponent " << e0 + r << " token " << k << " on " << dot_simd_target();
    }
  });
}

TEST(DotSimd, RejectsBadRowCounts) {
  std::vector<uint8_t> w(row_bytes(TensorType::Q4_K, 256)), x(row_bytes(TensorType::Q8_K, 256));
  float out[(kDotRowsMax + 1) * (kDotTokensMax + 1)];
  EXPECT_ANY_THROW(vec_dot_tile(TensorType::Q4_K, w.data(), 0, 1, x.data(), 0, 0, 256, out, 1));
  EXPECT_ANY_THROW(vec_dot_tile(TensorType::Q4_K, w.data(), 0, 1, x.data(), 0, kDotTokensMax + 1, 256, out, 1));
  EXPECT_ANY_THROW(vec_dot_tile(TensorType::Q4_K, w.data(), 0, 0, x.data(), 0, 1, 256, out, 1));
  EXPECT_ANY_THROW(vec_dot_tile(TensorType::Q4_K, w.data(), 0, kDotRowsMax + 1, x.data(), 0, 1, 256, out, 1));
  EXPECT_ANY_THROW(vec_dot_tile(TensorType::F32, w.data(), 0, 1, x.data(), 0, 1, 256, out, 1));
  TokenGroup g;
  EXPECT_ANY_THROW(prepare_token_group(TensorType::Q8_K, x.data(), 0, 0, 1, g));
  EXPECT_ANY_THROW(prepare_token_group(TensorType::Q8_K, x.data(), 0, kGroupTokens + 1, 1, g));
  EXPECT_ANY_THROW(prepare_token_group(TensorType::F32, x.data(), 0, 1, 1, g));
  prepare_token_group(TensorType::Q8_K, x.data(), 0, 1, 1, g);
  float group_out[kDotRowsMax * kGroupTokens];
  EXPECT_ANY_THROW(token_group_dot(TensorType::F32, w.data(), 0, 1, g, group_out));
  EXPECT_ANY_THROW(token_group_dot(TensorType::Q4_0, w.data(), 0, 1, g, group_out));  // wants Q8_0 activations
  EXPECT_ANY_THROW(token_group_dot(TensorType::Q4_K, w.data(), 0, kDotRowsMax + 1, g, group_out));
}

}  // namespace
}  // namespace pagoda
