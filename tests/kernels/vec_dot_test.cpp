// Every quantized dot kernel against the scalar dequantize-then-dot
// reference: both rows decoded with dequantize_row, multiplied in double.
// The kernels work in integers per block, so the only difference is float
// rounding of the per-block scale products: a relative 1e-5 of sum |w x|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "kernels/quant_dot.h"
#include "quant/dot.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

struct Dot {
  double value = 0, magnitude = 0;  // sum w*x and sum |w*x|
};

Dot reference_dot(TensorType wt, const void* w, TensorType xt, const void* x, size_t n) {
  std::vector<float> wf(n), xf(n);
  dequantize_row(wt, w, wf.data(), n);
  dequantize_row(xt, x, xf.data(), n);
  Dot d;
  for (size_t i = 0; i < n; ++i) {
    d.value += double(wf[i]) * xf[i];
    d.magnitude += std::fabs(double(wf[i]) * xf[i]);
  }
  return d;
}

std::vector<float> gaussian(size_t n, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

const TensorType kTypes[] = {TensorType::Q8_0,   TensorType::Q4_0,  TensorType::Q5_0, TensorType::Q5_1,
                             TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K, TensorType::Q3_K,
                             TensorType::Q4_K,   TensorType::Q5_K,  TensorType::Q6_K, TensorType::IQ4_XS};

// Lengths that are and are not multiples of common SIMD widths (in blocks).
std::vector<size_t> lengths(TensorType t) {
  if (block_elems(t) == 32) return {32, 64, 96, 224, 1056, 4096 + 32};
  return {256, 512, 768, 2816, 4096};
}

TEST(QuantizedDot, ActivationTypes) {
  EXPECT_EQ(activation_type(TensorType::Q8_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q5_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::Q6_K), TensorType::Q8_K);
  for (TensorType t : {TensorType::Q5_1, TensorType::IQ4_NL, TensorType::MXFP4})
    EXPECT_EQ(activation_type(t), TensorType::Q8_0);
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q5_K, TensorType::IQ4_XS})
    EXPECT_EQ(activation_type(t), TensorType::Q8_K);
  EXPECT_FALSE(has_quantized_dot(TensorType::F16));
  EXPECT_THROW(activation_type(TensorType::F32), Unsupported);
}

TEST(QuantizedDot, MatchesDequantizeThenDotOnRandomRows) {
  std::mt19937 rng{2024};
  for (TensorType t : kTypes) {
    const TensorType xt = activation_type(t);
    double worst = 0;
    for (size_t n : lengths(t)) {
      for (int trial = 0; trial < 4; ++trial) {
        // Weight-like rows, activations with a few large channels (as real ones have).
        const auto w = gaussian(n, rng, 0.05f);
        auto x = gaussian(n, rng, 1.0f);
        for (int k = 0; k < 3; ++k) x[rng() % n] *= 20.0f;
        const auto wq = quantize(t, w.data(), n), xq = quantize(xt, x.data(), n);
        const float got = vec_dot(t, wq.data(), xq.data(), n);
        const Dot ref = reference_dot(t, wq.data(), xt, xq.data(), n);
        const double err = std::fabs(got - ref.value) / ref.magnitude;
        worst = std::max(worst, err);
        ASSERT_LE(err, 1e-5) << tensor_type_name(t) << " n=" << n << " got " << got << " want " << ref.value;

        // Against the unquantized activations: the 8-bit rounding of x costs
        // at most half a step per element, |w| * d_x / 2 summed.
        std::vector<float> wf(n);
        dequantize_row(t, wq.data(), wf.data(), n);
        double exact = 0, bound = 0;
        const size_t xb = block_elems(xt);
        for (size_t b0 = 0; b0 < n; b0 += xb) {
          float amax = 0;
          for (size_t i = b0; i < b0 + xb; ++i) amax = std::max(amax, std::fabs(x[i]));
          for (size_t i = b0; i < b0 + xb; ++i) {
            exact += double(wf[i]) * x[i];
            bound += std::fabs(wf[i]) * amax / 127.0 * 0.51;
          }
        }
        ASSERT_LE(std::fabs(got - exact), bound + 1e-5 * ref.magnitude) << tensor_type_name(t) << " n=" << n;
      }
    }
    ::testing::Test::RecordProperty(std::string("worst_rel_") + std::string(tensor_type_name(t)),
                                    fmt::format("{:.2e}", worst));
  }
}

// Arbitrary bit patterns (every code, scale and min the format can hold, Q6_K
// scale -128 included) with sane F16 super-block scales: the kernels must
// agree with the decoder on all of them, not just on what our quantizer emits.
TEST(QuantizedDot, MatchesReferenceOnRandomBlockBytes) {
  std::mt19937 rng{99};
  for (TensorType t : kTypes) {
    const TensorType xt = activation_type(t);
    for (size_t n : lengths(t)) {
      const auto wq = testing::random_blocks(t, n, rng);
      // Activations at full 8-bit range, extremes included.
      auto x = gaussian(n, rng, 1.0f);
      x[0] = 1e3f;
      const auto xq = quantize(xt, x.data(), n);
      const float got = vec_dot(t, wq.data(), xq.data(), n);
      const Dot ref = reference_dot(t, wq.data(), xt, xq.data(), n);
      ASSERT_LE(std::fabs(got - ref.value), 1e-5 * ref.magnitude) << tensor_type_name(t) << " n=" << n;
    }
  }
}

// The largest integer sums each format can produce, computed exactly.
TEST(QuantizedDot, ExtremeBlocksDoNotOverflow) {
  std::vector<float> ones(256, -1.0f);
  const auto xq8 = quantize(TensorType::Q8_0, ones.data(), 256);  // codes -127
  const auto xqk = quantize(TensorType::Q8_K, ones.data(), 256);

  BlockQ6_K q6;
  std::memset(&q6, 0, sizeof q6);  // every code 0 -> -32
  for (auto& s : q6.scales) s = -128;
  q6.d = f32_to_f16(1.0f);
  // sum = 256 elements * (-32 * -128) * (1 * -1)
  EXPECT_FLOAT_EQ(vec_dot(TensorType::Q6_K, &q6, xqk.data(), 256), -256.0f * 32 * 128);

  BlockQ4_K q4;
  std::memset(&q4, 0xFF, sizeof q4);  // codes 15, scales and mins 63
  q4.d = f32_to_f16(1.0f);
  q4.dmin = f32_to_f16(0.0f);
  EXPECT_FLOAT_EQ(vec_dot(TensorType::Q4_K, &q4, xqk.data(), 256), -256.0f * 63 * 15);

  std::vector<BlockQ8_0> q8(8);
  for (auto& b : q8) {
    b.d = f32_to_f16(1.0f);
    std::memset(b.qs, 0x81, sizeof b.qs);  // -127
  }
  const float d8 = f16_to_f32(reinterpret_cast<const BlockQ8_0*>(xq8.data())->d);
  EXPECT_FLOAT_EQ(vec_dot(TensorType::Q8_0, q8.data(), xq8.data(), 256), 256.0f * 127 * 127 * d8);

  std::vector<BlockMXFP4> mx(8);
  for (auto& b : mx) {
    b.e = 128;                             // (halved) scale 1
    std::memset(b.qs, 0x77, sizeof b.qs);  // every value 12 (E2M1's 6, doubled)
  }
  EXPECT_FLOAT_EQ(vec_dot(TensorType::MXFP4, mx.data(), xq8.data(), 256), -256.0f * 12 * 127 * d8);

  BlockQ5_K q5;
  std::memset(&q5, 0xFF, sizeof q5);  // codes 31, scales and mins 63
  q5.d = f32_to_f16(1.0f);
  q5.dmin = f32_to_f16(0.0f);
  EXPECT_FLOAT_EQ(vec_dot(TensorType::Q5_K, &q5, xqk.data(), 256), -256.0f * 63 * 31);

  BlockIQ4_XS iq4;
  std::memset(&iq4, 0, sizeof iq4);  // every scale -32, every value -127
  iq4.d = f32_to_f16(1.0f);
  EXPECT_FLOAT_EQ(vec_dot(TensorType::IQ4_XS, &iq4, xqk.data(), 256), -256.0f * 32 * 127);

  BlockQ3_K q3;
  std::memset(&q3, 0, sizeof q3);  // every value -4, every scale -32
  q3.d = f32_to_f16(1.0f);
  EXPECT_FLOAT_EQ(vec_dot(TensorType::Q3_K, &q3, xqk.data(), 256), -256.0f * 4 * 32);
}

}  // namespace
}  // namespace pagoda
