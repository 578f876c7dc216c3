// The other kernels' source compiled for the CPU and run there
// (host_emulation.h), with the launch shapes their launchers use, against the
// same references as the GPU tests. Needs no GPU: indexing, decoding, warp and
// block sums are checked on every machine. Here the kernels' float arithmetic
// is the host's, so exactness claims (embedding, F16 rounding, RoPE against the
// CPU's Rope) hold exactly; the GPU tests check the device's own rounding.
#include "host_emulation.h"
// The emulation's definitions first: the kernels' source uses them.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda/dequant_kernels.cuh"
#include "cuda/kv_kernels.cuh"
#include "cuda/matvec_kernel.cuh"
#include "cuda/norm_rope_act.h"
#include "cuda/norm_rope_act_kernels.cuh"
#include "cuda_test_util.h"
#include "kernels/activations.h"
#include "model/ops.h"
#include "model/rope.h"
#include "weights_case.h"

namespace pagoda::cuda {
namespace {

using testing::decode_cpu;
using testing::kWeightTypes;
using testing::random_weights;
using testing::row_length;

// Each weight type through its decoder: embed_rows (exact), dequantize_rows_f16
// (one rounding) and matvec (within the summation bound). 9 rows: a block of 4
// warps left part empty, and fewer CPU threads to start than the GPU test's 37.
TEST(CudaKernelsOnHost, EmbedDequantizeAndMatvecMatchTheCpu) {
  std::mt19937 rng(101);
  const int64_t kRows = 9;
  for (TensorType t : kWeightTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const int64_t k = row_length(t);
    const std::vector<uint8_t> w = random_weights(t, kRows, k, rng);
    const std::vector<float> wf = decode_cpu(t, w, kRows, k);
    const size_t rb = weight_row_bytes(t, k);
    detail::dispatch_weight_type(t, [&](auto decoder) {
      using D = decltype(decoder);
      const std::vector<int32_t> ids = {5, 8, -1, 5, 0, 2, int32_t(kRows)};
      std::vector<float> emb = testing::nan_floats(ids.size() * size_t(k));
      emulation::launch(dim3(unsigned(ids.size())), dim3(detail::kDequantThreads), detail::embed_rows_kernel<D>,
                        w.data(), rb, kRows, k, ids.data(), emb.data());
      for (size_t i = 0; i < ids.size(); ++i)
        for (int64_t j = 0; j < k; ++j) {
          if (ids[i] < 0 || ids[i] >= kRows)
            EXPECT_TRUE(std::isnan(emb[i * k + j]));
          else
            EXPECT_EQ(emb[i * k + j], wf[ids[i] * k + j]) << i << " " << j;
        }

      std::vector<uint16_t> w16 = testing::nan_halves(wf.size());
      emulation::launch(dim3(unsigned(kRows)), dim3(detail::kDequantThreads), detail::dequantize_rows_f16_kernel<D>,
                        w.data(), rb, k, reinterpret_cast<__half*>(w16.data()));
      for (size_t i = 0; i < wf.size(); ++i) EXPECT_EQ(w16[i], f32_to_f16(wf[i])) << i;

      for (int n_tokens : {1, 7}) {
        const std::vector<float> x = testing::random_floats(size_t(n_tokens * k), rng);
        std::vector<float> out = testing::nan_floats(size_t(n_tokens * kRows));
        emulation::launch(dim3(unsigned(detail::matvec_blocks(kRows))), dim3(detail::kMatvecWarps * 32),
                          detail::matvec_kernel<D>, w.data(), rb, kRows, k, x.data(), n_tokens, out.data());
        testing::expect_matvec_matches(wf, x, out, n_tokens, kRows, k);
      }
      return cudaSuccess;
    });
  }
}

// The block sum over 8 warps; in place, as the layers call it.
TEST(CudaKernelsOnHost, RmsNormMatchesADoubleLoop) {
  std::mt19937 rng(102);
  const int n = 1000, n_tokens = 3;
  const float eps = 1e-5f;
  const std::vector<float> x = testing::random_floats(size_t(n_tokens) * n, rng, 3.0f);
  const std::vector<float> w = testing::random_floats(n, rng);
  std::vector<float> got = x;
  emulation::launch(dim3(n_tokens), dim3(detail::kNormThreads), detail::rms_norm_kernel, got.data(), w.data(),
                    got.data(), n, eps);
  testing::expect_rms_norm(x, w, got, n_tokens, n, eps);
}

// The same double-precision angles from the same libm as the CPU's Rope, and
// the same float roundings: equal to the bit.
TEST(CudaKernelsOnHost, RopeIsTheCpuRopeToTheBit) {
  std::mt19937 rng(103);
  const int n_tokens = 7, n_heads = 3, head_dim = 64, n_rot = 48;
  std::vector<float> factors(n_rot / 2);
  for (auto& f : factors) f = 1.0f + float(rng() % 100) / 10.0f;
  for (bool neox : {false, true}) {
    for (int variant = 0; variant < 3; ++variant) {
      const bool with_factors = variant == 1, yarn = variant == 2;
      SCOPED_TRACE(std::string(neox ? "neox" : "normal") + (with_factors ? " with factors, linear" : "") +
                   (yarn ? " YaRN" : ""));
      std::vector<float> x = testing::random_floats(size_t(n_tokens) * n_heads * head_dim, rng);
      std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
      for (auto& p : pos) p = int32_t(rng() % 100000);
      std::vector<float> got = x;
      const float base = neox ? 1000000.0f : 10000.0f;
      const float linear = with_factors ? 8.0f : 1.0f;  // Gemma 3's global layers' factor
      RopeSpec spec;
      spec.layout = neox ? RopeLayout::NeoX : RopeLayout::Interleaved;
      spec.dims = n_rot;
      spec.base = base;
      spec.freq_factors = with_factors;
      spec.attn_factor = with_factors ? 0.75f : 1.0f;
      if (with_factors) {
        spec.scaling = RopeScaling::Linear;
        spec.factor = linear;
      }
      if (yarn) {  // gpt-oss's: 32 over 4096 positions (the magnitude then scales too)
        spec.scaling = RopeScaling::Yarn;
        spec.factor = 32.0f;
        spec.yarn_orig_ctx = 4096;
      }
      const Rope::YarnRamp ramp = Rope::yarn_ramp(spec, n_rot);
      emulation::launch(dim3(n_tokens), dim3(detail::kNormThreads), detail::rope_kernel, got.data(), pos.data(),
                        n_heads, head_dim, n_rot, base, neox, with_factors ? factors.data() : nullptr, linear,
                        Rope::mscale(spec), yarn ? spec.factor : 0.0f, ramp.low, ramp.high);
      const Rope cpu(spec, head_dim, factors);
      for (int t = 0; t < n_tokens; ++t) cpu.apply(x.data() + size_t(t) * n_heads * head_dim, n_heads, pos[size_t(t)]);
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i]) << "element " << i;
    }
  }
}

// Grid-stride loops over fewer blocks than elements need.
TEST(CudaKernelsOnHost, SwigluAndAddCoverEveryElement) {
  std::mt19937 rng(104);
  const int64_t n = 1001;
  const std::vector<float> gate = testing::random_floats(size_t(n), rng, 4.0f),
                           up = testing::random_floats(size_t(n), rng);
  std::vector<float> out = testing::nan_floats(size_t(n));
  emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::swiglu_kernel, gate.data(), up.data(), out.data(), n);
  std::vector<float> y = up;
  emulation::launch(dim3(3), dim3(detail::kNormThreads), detail::add_kernel, y.data(), gate.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[size_t(i)], ref = g / (1 + std::exp(-g)) * up[size_t(i)];
    ASSERT_NEAR(out[size_t(i)], ref, 2e-6 * std::abs(ref) + 1e-30) << i;
    ASSERT_EQ(y[size_t(i)], up[size_t(i)] + gate[size_t(i)]) << i;
  }
}

// GeGLU against the CPU model's own (Highway's tanh, a few ulps from the
// host's tanhf): the tanh's error is relative to 1, so the bound is on |g u|.
// The embedding scale is one float product, exact.
TEST(CudaKernelsOnHost, GegluTanhIsTheCpusAndScaleIsOneProduct) {
  std::mt19937 rng(106);
  const int64_t n = 1001;
  std::vector<float> gate = testing::random_floats(size_t(n), rng, 6.0f);
  gate[0] = 0.0f, gate[1] = -12.0f, gate[2] = 12.0f;  // zero and both saturations
  const std::vector<float> up = testing::random_floats(size_t(n), rng);
  std::vector<float> out = testing::nan_floats(size_t(n)), cpu = gate;
  emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::geglu_tanh_kernel, gate.data(), up.data(), out.data(),
                    n);
  geglu_tanh_simd(cpu.data(), up.data(), size_t(n));
  std::vector<float> scaled = up;
  const float s = std::sqrt(256.0f);
  emulation::launch(dim3(3), dim3(detail::kNormThreads), detail::scale_kernel, scaled.data(), s, n);
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = size_t(i);
    const double g = gate[k], ref = 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * up[k];
    ASSERT_NEAR(out[k], cpu[k], 2e-6 * std::abs(g * up[k]) + 1e-30) << i;
    ASSERT_NEAR(out[k], ref, 2e-6 * std::abs(g * up[k]) + 1e-30) << i;
    ASSERT_EQ(scaled[k], up[k] * s) << i;
  }
}

// The logits' scale and soft-cap (granite, gemma2), the query's temperature
// (Ministral 3) and gemma4's per-layer input steps as the CPU writes them, and
// gpt-oss's clamped SwiGLU as its gated_activation.
TEST(CudaKernelsOnHost, ScalesSoftcapTemperatureAndTheClampedSwigluAreTheCpus) {
  std::mt19937 rng(107);
  const int64_t n = 1001;
  const std::vector<float> x = testing::random_floats(size_t(n), rng, 40.0f);
  for (const auto& [scale, cap] : std::vector<std::pair<float, float>>{{0.125f, 0.0f}, {1.0f, 30.0f}, {0.5f, 2.0f}}) {
    std::vector<float> got = x;
    emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::scale_softcap_kernel, got.data(), scale, cap, n);
    for (int64_t i = 0; i < n; ++i) {
      float z = x[size_t(i)] * scale;
      if (cap > 0) z = cap * std::tanh(z / cap);
      ASSERT_EQ(got[size_t(i)], z) << i;
    }
  }
  // The query's temperature: 7 tokens of 143 values (1001), positions across several periods of 8.
  const std::vector<int32_t> pos = {0, 7, 8, 20, 63, 64, 1000};
  std::vector<float> q = x;
  emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::query_temperature_kernel, q.data(), pos.data(), n, 143,
                    0.1f, 8);
  for (int64_t i = 0; i < n; ++i) {
    const float t = 1.0f + 0.1f * std::log(std::floor(float(pos[size_t(i / 143)]) / 8.0f) + 1.0f);
    ASSERT_EQ(q[size_t(i)], x[size_t(i)] * t) << i;
  }
  // gemma4's per-layer inputs: the blend of the projection and the token table, and the gated
  // GELU over a strided slice (7 tokens of 11, read from rows of 143).
  std::vector<float> blended = x;
  emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::blend_kernel, blended.data(), q.data(), 4.0f,
                    0.70710678f, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(blended[size_t(i)], (x[size_t(i)] + q[size_t(i)] * 4.0f) * 0.70710678f);
  std::vector<float> g(x.begin(), x.begin() + 77);
  emulation::launch(dim3(1), dim3(detail::kNormThreads), detail::gelu_times_kernel, g.data(), q.data() + 5, int64_t(77),
                    11, int64_t(143));
  for (int t = 0; t < 7; ++t)
    for (int i = 0; i < 11; ++i) {
      float want = x[size_t(t * 11 + i)];
      gelu_tanh(&want, 1);
      ASSERT_NEAR(g[size_t(t * 11 + i)], want * q[size_t(5 + t * 143 + i)],
                  1e-6 * std::abs(want * q[size_t(5 + t * 143 + i)]) + 1e-30);
    }
  const std::vector<float> up = testing::random_floats(size_t(n), rng, 6.0f);
  std::vector<float> out = testing::nan_floats(size_t(n)), want = x;
  emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::swiglu_oai_kernel, x.data(), up.data(), out.data(), n);
  gated_activation(Activation::SwigluOai, want.data(), up.data(), int(n));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(out[size_t(i)], want[size_t(i)], 1e-6 * std::abs(want[size_t(i)]) + 1e-30) << i;
}

TEST(CudaKernelsOnHost, StoreCopyAndGatherMoveTheRightElements) {
  std::mt19937 rng(105);
  // Rows 96 apart: a KV page slot wider than this layer's 80 (model/kv_storage.h).
  const int block_size = 16, num_blocks = 6, kv_dim = 80, row_stride = 96, n_tokens = 5;
  const size_t cache_elems = size_t(num_blocks) * block_size * row_stride,
               block_elems = size_t(block_size) * row_stride;
  const std::vector<float> k = testing::random_floats(size_t(n_tokens) * kv_dim, rng);
  const std::vector<float> v = testing::random_floats(size_t(n_tokens) * kv_dim, rng);
  const std::vector<int32_t> slots = {3 * block_size + 15, -1, 0, 5 * block_size + 1, block_size};
  const std::vector<uint16_t> k0 = testing::random_halves(cache_elems, rng),
                              v0 = testing::random_halves(cache_elems, rng);
  std::vector<uint16_t> kc = k0, vc = v0;
  emulation::launch(dim3(n_tokens), dim3(detail::kKvThreads), detail::store_kv_kernel, k.data(), v.data(), slots.data(),
                    kv_dim, row_stride, reinterpret_cast<__half*>(kc.data()), reinterpret_cast<__half*>(vc.data()));
  std::vector<uint16_t> k_want = k0, v_want = v0;
  for (int t = 0; t < n_tokens; ++t)
    for (int i = 0; slots[size_t(t)] >= 0 && i < kv_dim; ++i) {
      k_want[size_t(slots[size_t(t)]) * row_stride + i] = f32_to_f16(k[size_t(t) * kv_dim + i]);
      v_want[size_t(slots[size_t(t)]) * row_stride + i] = f32_to_f16(v[size_t(t) * kv_dim + i]);
    }
  ASSERT_EQ(kc, k_want);
  ASSERT_EQ(vc, v_want);

  const std::vector<int32_t> pairs = {0, 3, 2, 5};
  emulation::launch(dim3(2, 2), dim3(detail::kKvThreads), detail::copy_blocks_kernel,
                    reinterpret_cast<__half*>(kc.data()), reinterpret_cast<__half*>(vc.data()), pairs.data(),
                    int64_t(block_elems));
  for (size_t p = 0; p < 2; ++p)
    for (size_t i = 0; i < block_elems; ++i) {
      k_want[size_t(pairs[2 * p + 1]) * block_elems + i] = k_want[size_t(pairs[2 * p]) * block_elems + i];
      v_want[size_t(pairs[2 * p + 1]) * block_elems + i] = v_want[size_t(pairs[2 * p]) * block_elems + i];
    }
  ASSERT_EQ(kc, k_want);
  ASSERT_EQ(vc, v_want);

  const int64_t n = 1001;
  const std::vector<float> in = testing::random_floats(size_t(9 * n), rng);
  const std::vector<int32_t> idx = {8, 0, 3, 3};
  std::vector<float> out = testing::nan_floats(idx.size() * size_t(n));
  emulation::launch(dim3(unsigned(idx.size())), dim3(detail::kKvThreads), detail::gather_rows_kernel, in.data(),
                    idx.data(), n, out.data());
  for (size_t r = 0; r < idx.size(); ++r)
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], in[size_t(idx[r]) * n + i]) << r << " " << i;
}

}  // namespace
}  // namespace pagoda::cuda
