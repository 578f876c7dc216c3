// The SIMD activation encoder against the scalar quantize_row, byte for byte,
// on every SIMD target this CPU runs: Gaussian rows with outliers, exact .5
// ties (round to even), zero, subnormal, huge, infinite and NaN elements.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quantize_activations.h"
#include "quant/rows.h"
#include "simd_targets.h"

namespace pagoda {
namespace {

void expect_same_bytes(TensorType xt, const std::vector<float>& x) {
  const auto want = quantize(xt, x.data(), x.size());
  std::vector<uint8_t> got(want.size(), 0xAA);
  quantize_activations(xt, x.data(), got.data(), x.size());
  ASSERT_EQ(got, want) << tensor_type_name(xt) << " n=" << x.size();
}

// Every target the CPU supports, the fallback included.
template <class Body>
void for_each_target(Body body) {
  testing::for_each_simd_target([&](int64_t) { body(); });
}

TEST(QuantizeActivations, MatchesQuantizeRowOnGaussianRows) {
  for_each_target([] {
    std::mt19937 rng{3};
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (TensorType xt : {TensorType::Q8_K, TensorType::Q8_0})
      for (size_t n : {256, 512, 2048, 5632}) {
        std::vector<float> x(n);
        for (auto& v : x) v = g(rng);
        for (int k = 0; k < 4; ++k) x[rng() % n] *= 50.0f;
        expect_same_bytes(xt, x);
      }
  });
}

// amax 127 makes the scale exactly 1, so k + 0.5 lands on a tie.
TEST(QuantizeActivations, RoundsTiesAsTheScalarCodeDoes) {
  for_each_target([] {
    std::vector<float> x(512);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 255) - 127) + (i % 3 == 0 ? 0.5f : -0.5f);
    x[0] = 127.0f;
    x[256] = -127.0f;
    expect_same_bytes(TensorType::Q8_K, x);
    for (size_t b = 0; b < x.size(); b += 32) x[b] = b % 64 ? -127.0f : 127.0f;  // every Q8_0 block
    x[1] = 0.49999997f;  // just below a half: 0 (adding 0.5 would round up to 1)
    x[2] = -0.49999997f;
    expect_same_bytes(TensorType::Q8_0, x);
  });
}

TEST(QuantizeActivations, MatchesQuantizeRowOnSpecialValues) {
  for_each_target([] {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float denorm = std::numeric_limits<float>::denorm_min();
    std::mt19937 rng{5};
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (std::vector<float> specials : std::vector<std::vector<float>>{
             {0.0f}, {-0.0f}, {denorm, -denorm}, {3e38f, -3e38f}, {inf}, {-inf}, {nan}, {nan, 1.0f}, {inf, nan}}) {
      std::vector<float> x(1024);
      for (auto& v : x) v = g(rng);
      for (size_t i = 0; i < specials.size(); ++i) x[17 * i + 3] = specials[i];
      std::vector<float> all(256, specials[0]);  // a block of nothing else
      for (TensorType xt : {TensorType::Q8_K, TensorType::Q8_0}) {
        expect_same_bytes(xt, x);
        expect_same_bytes(xt, all);
      }
    }
  });
}

}  // namespace
}  // namespace pagoda
