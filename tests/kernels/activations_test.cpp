// SwiGLU and GeGLU on every SIMD target this CPU runs: within rounding of double
// precision, the same on every FMA target, NaN in NaN out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "float_test_data.h"
#include "kernels/activations.h"
#include "simd_targets.h"

namespace pagoda {
namespace {

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
  for (const auto& r : fma_results)
    EXPECT_EQ(0, std::memcmp(r.data(), fma_results[0].data(), r.size() * sizeof(float)));
}

TEST(SimdFloat, SwiGluOfNanIsNan) {
  float gate[3] = {NAN, 1.0f, -NAN}, up[3] = {1.0f, NAN, 2.0f};
  swiglu_simd(gate, up, 3);
  for (float g : gate) EXPECT_TRUE(std::isnan(g));
}

TEST(SimdFloat, GeGluTanhMatchesDoublePrecisionOnEveryTarget) {
  testing::for_each_simd_target([&](int64_t) {
    for (size_t n : lengths()) {
      auto gate = random_floats(n, uint32_t(n) + 21, 8.0f);
      const auto up = random_floats(n, uint32_t(n) + 22);
      const float edges[] = {-200.0f, -10.0f, 10.0f, 200.0f, 0.0f, -0.0f};
      for (size_t i = 0; i < std::min(n, std::size(edges)); ++i) gate[(i * 7) % n] = edges[i];
      const auto in = gate;
      geglu_tanh_simd(gate.data(), up.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const double x = in[i];
        const double want = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * up[i];
        // tanh's few ULP near 0 where 1 + tanh cancels for negative x: absolute, relative to |x u|.
        ASSERT_NEAR(gate[i], want, std::fabs(x * up[i]) * 2e-6 + 1e-30) << n << " at " << i << ", gate " << x;
      }
    }
  });
}

}  // namespace
}  // namespace pagoda
