// The attention kernels and softmax on every SIMD target this CPU runs:
// scores and values bit for bit one dot and one axpy per row (float_matmul.h),
// softmax within rounding of double precision and the same on every FMA
// target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "float_test_data.h"
#include "kernels/attention.h"
#include "kernels/float_matmul.h"
#include "simd_targets.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

// A sink (gpt-oss) joins the denominator only: the weights sum to 1 less its share.
TEST(SimdFloat, SoftmaxWithASinkGivesItsShareToNoPosition) {
  testing::for_each_simd_target([&](int64_t) {
    for (size_t n : lengths())
      for (const float sink : {-3.0f, 0.5f, 40.0f}) {
        auto x = random_floats(n, uint32_t(n) + 11, 4.0f);
        const auto in = x;
        softmax_scaled(x.data(), n, 0.5f, sink);
        double max = sink, sum = 0;
        for (float v : in) max = std::max(max, 0.5 * v);
        for (float v : in) sum += std::exp(0.5 * v - max);
        sum += std::exp(sink - max);
        for (size_t i = 0; i < n; ++i) {
          const double want = std::exp(0.5 * in[i] - max) / sum;
          ASSERT_NEAR(x[i], want, want * 1e-5 + 1e-30) << n << " sink " << sink;
        }
      }
  });
}

TEST(SimdFloat, SoftmaxMatchesDoublePrecisionAndIsTheSameOnEveryFmaTarget) {
  std::vector<std::vector<float>> fma_results;
  testing::for_each_simd_target([&](int64_t target) {
    std::vector<float> all;
    for (size_t n : lengths()) {
      auto x = random_floats(n, uint32_t(n) + 7, 30.0f);  // wide: most weights underflow towards 0
      x[n / 2] = -1e30f;                                  // a hopeless position
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
  for (const auto& r : fma_results)
    EXPECT_EQ(0, std::memcmp(r.data(), fma_results[0].data(), r.size() * sizeof(float)));
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
      if constexpr (std::is_same_v<Elem, float>)
        pool[i] = values[i];
      else
        pool[i] = f32_to_f16(values[i]);
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
                  << "block " << block << " hd " << hd << " heads " << n_q << " n " << n << " head " << h
                  << " position " << p;
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
  EXPECT_FALSE(attend_kernels_take(8));  // stories260K's heads
  EXPECT_FALSE(attend_kernels_take(72));
  EXPECT_FALSE(attend_kernels_take(256));
  float q[8] = {}, s[1];
  const PagedRows none;
  EXPECT_THROW(attend_scores(q, 1, 8, none, 1, s, 1), InvalidArgument);
}

}  // namespace
}  // namespace pagoda
