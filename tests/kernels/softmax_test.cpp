// The sampler's SIMD passes (kernels/softmax.h) on every SIMD target this CPU
// runs, against scalar references: the maximum and the NaN/+inf check
// exactly, the weights within exp's rounding of the scalar float argument.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "float_test_data.h"
#include "kernels/softmax.h"
#include "simd_targets.h"

namespace pagoda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SimdSoftmax, ScanFindsTheMaximumAndEveryBadLogit) {
  testing::for_each_simd_target([&](int64_t) {
    for (size_t n : lengths()) {
      auto x = random_floats(n, uint32_t(n) + 31, 20.0f);
      x[(n * 3) / 4] = -kInf;  // a mask: allowed
      const float want = *std::max_element(x.begin(), x.end());
      const LogitScan s = scan_logits(x.data(), n);
      EXPECT_TRUE(s.ok) << n;
      EXPECT_EQ(s.max, n == 1 ? -kInf : want) << n;
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInf}) {
        for (size_t at : {size_t(0), n / 2, n - 1}) {  // the first, a middle one, the tail's last
          auto y = x;
          y[at] = bad;
          EXPECT_FALSE(scan_logits(y.data(), n).ok) << n << " at " << at << ": " << bad;
        }
      }
    }
    const float masked[3] = {-kInf, -kInf, -kInf};
    EXPECT_EQ(scan_logits(masked, 3).max, -kInf);
  });
}

TEST(SimdSoftmax, WeightsMatchDoublePrecision) {
  testing::for_each_simd_target([&](int64_t) {
    for (size_t n : lengths()) {
      auto x = random_floats(n, uint32_t(n) + 41, 30.0f);
      x[n / 3] = -kInf;
      const float best = *std::max_element(x.begin(), x.end());
      if (best == -kInf) continue;  // every logit masked: the sampler stops before the weights
      for (float t : {1.0f, 0.7f, 1e-3f, 5.0f}) {
        std::vector<float> w(n, -1.0f);
        exp_weights(x.data(), n, best, t, w.data());
        for (size_t i = 0; i < n; ++i) {
          // The scalar sampler's argument, rounded as it was in float; then exp in double.
          const float arg = (x[i] - best) / t;
          const double want = x[i] == -kInf ? 0.0 : std::exp(double(arg));
          // exp's ULP and the final rounding; below float's range both are ~0.
          ASSERT_NEAR(w[i], want, want * 1e-6 + 1e-37) << n << " at " << i << ", T " << t;
        }
      }
    }
  });
}

}  // namespace
}  // namespace pagoda
