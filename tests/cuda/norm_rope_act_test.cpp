// rms_norm, rope, swiglu, geglu_tanh, scale and add against double loops,
// model/rope.h's Rope and the CPU's GeGLU.
#include <cmath>
#include <random>
#include <vector>

#include "cuda/norm_rope_act.h"
#include "cuda_test_util.h"
#include "kernels/activations.h"
#include "model/rope.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

// F32 sum of n squares (error up to about n * 2^-24 relative), a square root and
// two products: 1e-4 relative covers n = 1000 with room; a wrong row or weight is off by far more.
TEST(CudaNorm, RmsNormMatchesADoubleLoop) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(61);
  const int n = 1000;
  const float eps = 1e-5f;
  for (int n_tokens : {1, 7}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE("tokens " + std::to_string(n_tokens) + (in_place ? " in place" : ""));
      const std::vector<float> x = testing::random_floats(size_t(n_tokens) * n, rng, 3.0f);
      const std::vector<float> w = testing::random_floats(n, rng);
      DeviceBuffer<float> x_d(x), w_d(w), out_d(testing::nan_floats(x.size()));
      float* out = in_place ? x_d.get() : out_d.get();
      ASSERT_EQ(rms_norm(x_d.get(), w_d.get(), out, n_tokens, n, eps, nullptr), cudaSuccess);
      PAGODA_CUDA_SYNC();
      const std::vector<float> got = in_place ? x_d.download() : out_d.download();
      testing::expect_rms_norm(x, w, got, n_tokens, n, eps);
    }
  }
}

struct RopeCase {
  RopeStyle style;
  float base;
  bool freq_factors;
  float attn_factor;  // the CPU's mscale without YaRN
  float linear = 1;   // linear scaling's factor; 1: none
  float yarn = 0;     // YaRN's factor over a 4096-position original context; 0: none
};

// The CPU's Rope computes the angle, cos and sin in double, as the kernel does;
// CUDA's pow and sincos err by 1-2 ulp in double, so c and s round to the same
// float nearly always and differ by an ulp at worst: 1e-5 on values of about
// 1 allows a few float ulps. A wrong pair, frequency or position is off by ~1.
TEST(CudaRope, MatchesTheCpuRope) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(62);
  const int n_heads = 5, head_dim = 64, n_rot = 48;  // partial rotary: dims 48..63 stay
  const RopeCase cases[] = {{RopeStyle::kNormal, 10000.0f, false, 1.0f},
                            {RopeStyle::kNeox, 1000000.0f, false, 1.0f},
                            {RopeStyle::kNormal, 500000.0f, true, 0.75f},
                            {RopeStyle::kNeox, 10000.0f, true, 1.0f},
                            {RopeStyle::kNeox, 1000000.0f, false, 1.0f, 8.0f},         // Gemma 3's global layers
                            {RopeStyle::kNeox, 150000.0f, false, 1.0f, 1.0f, 32.0f}};  // gpt-oss's YaRN
  for (const RopeCase& c : cases) {
    for (int n_tokens : {1, 7}) {
      SCOPED_TRACE(fmt::format("{} base {} factors {} tokens {}", c.style == RopeStyle::kNeox ? "neox" : "normal",
                               c.base, c.freq_factors, n_tokens));
      std::vector<float> x = testing::random_floats(size_t(n_tokens) * n_heads * head_dim, rng);
      std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
      for (auto& p : pos) p = int32_t(rng() % 40000);
      pos[0] = 0;
      std::vector<float> factors(n_rot / 2);
      for (auto& f : factors) f = 1.0f + float(rng() % 100) / 10.0f;
      DeviceBuffer<float> x_d(x), factors_d(factors);
      DeviceBuffer<int32_t> pos_d(pos);
      RopeSpec spec;
      spec.layout = c.style == RopeStyle::kNeox ? RopeLayout::NeoX : RopeLayout::Interleaved;
      spec.dims = n_rot;
      spec.base = c.base;
      spec.freq_factors = c.freq_factors;
      spec.attn_factor = c.attn_factor;
      if (c.linear != 1) {
        spec.scaling = RopeScaling::Linear;
        spec.factor = c.linear;
      }
      if (c.yarn > 0) {
        spec.scaling = RopeScaling::Yarn;
        spec.factor = c.yarn;
        spec.yarn_orig_ctx = 4096;
      }
      const Rope::YarnRamp ramp = Rope::yarn_ramp(spec, n_rot);
      RopeParams p{.n_rot = n_rot,
                   .freq_base = c.base,
                   .style = c.style,
                   .freq_factors = c.freq_factors ? factors_d.get() : nullptr,
                   .linear_factor = c.linear,
                   .mscale = Rope::mscale(spec),
                   .yarn_factor = c.yarn,
                   .yarn_low = ramp.low,
                   .yarn_high = ramp.high};
      ASSERT_EQ(rope(x_d.get(), pos_d.get(), n_tokens, n_heads, head_dim, p, nullptr), cudaSuccess);
      PAGODA_CUDA_SYNC();
      const std::vector<float> got = x_d.download();
      const Rope cpu(spec, head_dim, factors);
      for (int t = 0; t < n_tokens; ++t) cpu.apply(x.data() + size_t(t) * n_heads * head_dim, n_heads, pos[size_t(t)]);
      for (size_t i = 0; i < x.size(); ++i) {
        if (int(i % head_dim) >= n_rot)
          ASSERT_EQ(got[i], x[i]) << "element " << i << " past n_rot changed";
        else
          ASSERT_NEAR(got[i], x[i], 1e-5 * (1 + std::abs(x[i]))) << "element " << i;
      }
    }
  }
}

// expf errs by up to 2 ulp, then a division and a product: 2e-6 relative is a
// few ulps of room.
TEST(CudaActivations, SwigluMatchesADoubleLoop) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(63);
  const size_t n = 1001;
  const std::vector<float> gate = testing::random_floats(n, rng, 4.0f), up = testing::random_floats(n, rng);
  DeviceBuffer<float> gate_d(gate), up_d(up), out_d(testing::nan_floats(n));
  ASSERT_EQ(swiglu(gate_d.get(), up_d.get(), out_d.get(), int64_t(n), nullptr), cudaSuccess);
  ASSERT_EQ(swiglu(gate_d.get(), up_d.get(), gate_d.get(), int64_t(n), nullptr), cudaSuccess);  // in place
  PAGODA_CUDA_SYNC();
  const std::vector<float> out = out_d.download(), in_place = gate_d.download();
  for (size_t i = 0; i < n; ++i) {
    const double g = gate[i], ref = g / (1 + std::exp(-g)) * up[i];
    ASSERT_NEAR(out[i], ref, 2e-6 * std::abs(ref) + 1e-30) << i;
    ASSERT_EQ(in_place[i], out[i]) << i;
  }
}

// The device's tanhf errs by a few ulps, as Highway's does on the CPU: both
// errors are relative to the 1 they are added to, so the bound is on |g u|.
TEST(CudaActivations, GegluTanhMatchesTheCpu) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(65);
  const size_t n = 1001;
  std::vector<float> gate = testing::random_floats(n, rng, 6.0f);
  gate[0] = 0.0f, gate[1] = -12.0f, gate[2] = 12.0f;
  const std::vector<float> up = testing::random_floats(n, rng);
  DeviceBuffer<float> gate_d(gate), up_d(up), out_d(testing::nan_floats(n));
  ASSERT_EQ(geglu_tanh(gate_d.get(), up_d.get(), out_d.get(), int64_t(n), nullptr), cudaSuccess);
  ASSERT_EQ(geglu_tanh(gate_d.get(), up_d.get(), gate_d.get(), int64_t(n), nullptr), cudaSuccess);  // in place
  PAGODA_CUDA_SYNC();
  const std::vector<float> out = out_d.download(), in_place = gate_d.download();
  std::vector<float> cpu = gate;
  geglu_tanh_simd(cpu.data(), up.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(out[i], cpu[i], 4e-6 * std::abs(double(gate[i]) * up[i]) + 1e-30) << i;
    ASSERT_EQ(in_place[i], out[i]) << i;
  }
}

// One F32 product per element: exact.
TEST(CudaActivations, ScaleIsOneProduct) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(66);
  const size_t n = 4099;
  const std::vector<float> x = testing::random_floats(n, rng);
  DeviceBuffer<float> x_d(x);
  const float s = std::sqrt(2560.0f);
  ASSERT_EQ(scale(x_d.get(), s, int64_t(n), nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> got = x_d.download();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * s) << i;
}

// One F32 addition per element: exact against the same addition on the CPU.
TEST(CudaActivations, AddIsTheResidualSum) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(64);
  const size_t n = 4099;
  const std::vector<float> y = testing::random_floats(n, rng), x = testing::random_floats(n, rng);
  DeviceBuffer<float> y_d(y), x_d(x);
  ASSERT_EQ(add(y_d.get(), x_d.get(), int64_t(n), nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> got = y_d.download();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], y[i] + x[i]) << i;
}

// The logits' scale and soft-cap, and the query's temperature by position:
// tanhf and logf within a few ulps of the host's.
TEST(CudaActivations, ScaleSoftcapAndQueryTemperature) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(66);
  const int n_tokens = 7, n = 143;
  const std::vector<float> x = testing::random_floats(size_t(n_tokens) * n, rng, 40.0f);
  const std::vector<int32_t> pos = {0, 7, 8, 20, 63, 64, 1000};
  DeviceBuffer<float> capped(x), q(x);
  DeviceBuffer<int32_t> pos_d(pos);
  ASSERT_EQ(scale_softcap(capped.get(), 0.5f, 2.0f, int64_t(x.size()), nullptr), cudaSuccess);
  ASSERT_EQ(query_temperature(q.get(), pos_d.get(), n_tokens, n, 0.1f, 8, nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> got_cap = capped.download(), got_q = q.download();
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(got_cap[i], 2.0 * std::tanh(x[i] * 0.5 / 2.0), 4e-7 * 2.0) << i;
    const double t = 1 + 0.1 * std::log(std::floor(pos[i / n] / 8.0) + 1);
    ASSERT_NEAR(got_q[i], x[i] * t, 1e-6 * std::abs(x[i] * t)) << i;
  }
}

}  // namespace
}  // namespace pagoda::cuda
