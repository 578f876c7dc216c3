#include "quant/rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

std::vector<float> random_row(size_t n, uint32_t seed) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Q8_0, LayoutAndRounding) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = float(i - 16) * 0.5f;  // amax 8 -> d = 8/127
  const auto bytes = quantize(TensorType::Q8_0, x.data(), 32);
  ASSERT_EQ(bytes.size(), 34u);
  BlockQ8_0 b;
  std::memcpy(&b, bytes.data(), 34);
  EXPECT_EQ(b.d, f32_to_f16(8.0f / 127.0f));
  EXPECT_EQ(b.qs[0], -127);  // -8 is the largest magnitude
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], int8_t(std::lround(0.5f * 127.0f / 8.0f)));
}

// Half a step of rounding, plus the scale's own F16 rounding (relative 2^-11) times 127.
TEST(Q8_0, RoundTripErrorWithinHalfAStep) {
  const auto x = random_row(32 * 40, 3);
  const auto q = quantize(TensorType::Q8_0, x.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row(TensorType::Q8_0, q.data(), y.data(), y.size());
  for (size_t blk = 0; blk < x.size() / 32; ++blk) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    const float step = amax / 127.0f;
    for (size_t j = 0; j < 32; ++j)
      ASSERT_LE(std::fabs(x[blk * 32 + j] - y[blk * 32 + j]), 0.5f * step + 127 * step / 2048 + 1e-6f);
  }
}

TEST(Rows, F16AndBf16RoundTrip) {
  const auto x = random_row(100, 5);
  for (TensorType t : {TensorType::F16, TensorType::BF16, TensorType::F32}) {
    const auto q = quantize(t, x.data(), x.size());
    EXPECT_EQ(q.size(), row_bytes(t, x.size()));
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), y.size());
    const float tol = t == TensorType::F32 ? 0.0f : (t == TensorType::F16 ? 1e-3f : 8e-3f);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(std::fabs(x[i] - y[i]), tol * std::fabs(x[i])) << i;
  }
}

TEST(Rows, UnsupportedTypesThrow) {
  float x[256] = {};
  uint8_t buf[1024];
  EXPECT_THROW(dequantize_row(TensorType::Q4_1, buf, x, 256), Unsupported);
  EXPECT_THROW(quantize_row(TensorType::Q8_1, x, buf, 256), Unsupported);
  EXPECT_THROW(quantize_row(TensorType::Q3_K, x, buf, 224), InvalidArgument);
  EXPECT_THROW(row_bytes(TensorType::IQ4_NL, 48), InvalidArgument);
  EXPECT_THROW(quantize_row(TensorType::MXFP4, x, buf, 48), InvalidArgument);
  EXPECT_THROW(quantize_row(TensorType::Q8_0, x, buf, 33), InvalidArgument);
  EXPECT_THROW(quantize_row(TensorType::Q4_K, x, buf, 224), InvalidArgument);
  EXPECT_THROW(row_bytes(TensorType::Q6_K, 255), InvalidArgument);
  EXPECT_FALSE(weight_type_supported(TensorType::Q4_1));
  for (TensorType t :
       {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,
        TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::IQ4_XS, TensorType::MXFP4})
    EXPECT_TRUE(weight_type_supported(t)) << tensor_type_name(t);
}

}  // namespace
}  // namespace pagoda
