// MXFP4 matrices through Pagoda's matmul (model/ops.h) against ggml's own
// code (llama.cpp v0.5.0's libraries, dlopen'ed: testing/llama_cpp_libs.h),
// for the formats' load path before any architecture stores experts in it:
// every output is within the activations' 8-bit rounding of ggml's to_float
// rows times the F32 activations (in F64), and equals bit for bit the dot
// product of ggml's CPU backend on the activations ggml quantizes itself
// (its portable x64 build, whose MXFP4 dot is the plain loop with the
// scalar reference's float expression). Row-major and in row panels, on
// every SIMD target, 1 to 9 tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/panels.h"
#include "kernels/simd_targets.h"
#include "model/ops.h"
#include "quant/rows.h"
#include "testing/ggml_api.h"
#include "testing/llama_cpp_libs.h"
#include "testing/npm_oracle.h"

namespace pagoda {
namespace {

namespace ggml = testing::ggml;

// Sanitizer builds load these uninstrumented libraries into an instrumented
// process; ggml's own allocations then look like leaks or bad frees.
#if defined(__SANITIZE_ADDRESS__)
#define PAGODA_SKIP_UNDER_SANITIZERS() \
  GTEST_SKIP() << "the oracle libraries are not built for AddressSanitizer; the Release build runs this test"
#else
#define PAGODA_SKIP_UNDER_SANITIZERS() (void)0
#endif

TEST(Mxfp4MatmulOracle, MatmulMatchesGgmlDotsAndDecoding) {
  PAGODA_SKIP_UNDER_SANITIZERS();
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const auto base = testing::SharedLibrary::open("libggml-base.so");
  const auto cpu = testing::SharedLibrary::open("libggml-cpu-x64.so");
  cpu.function<ggml::CpuInit>("ggml_cpu_init")();
  const ggml::TypeTraits* traits =
      base.function<ggml::GetTypeTraits>("ggml_get_type_traits")(ggml::Type(TensorType::MXFP4));
  const auto cpu_traits = cpu.function<ggml::GetTypeTraitsCpu>("ggml_get_type_traits_cpu");
  const ggml::TypeTraitsCpu* mx = cpu_traits(ggml::Type(TensorType::MXFP4));
  ASSERT_EQ(mx->vec_dot_type, ggml::Type(TensorType::Q8_0));
  const ggml::TypeTraitsCpu* q8 = cpu_traits(ggml::Type(TensorType::Q8_0));

  // Rows of several magnitudes (exponents 2^-4 .. 2^4 apart), 3 panels and a tail.
  const TensorType t = TensorType::MXFP4;
  const int rows = 3 * kPanelRows + 5;
  const size_t cols = 512, rb = row_bytes(t, cols), xb = row_bytes(TensorType::Q8_0, cols);
  std::mt19937 rng(23);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> values(size_t(rows) * cols);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.05f * gauss(rng) * std::ldexp(1.0f, int(i / cols % 9) - 4);
  const auto bytes = quantize(t, values.data(), values.size());
  std::vector<float> decoded(values.size());
  traits->to_float(bytes.data(), decoded.data(), int64_t(decoded.size()));
  auto packed = bytes;
  const Matrix row_major{"w", t, rows, int(cols), rb, bytes.data()};
  Matrix panels = row_major;
  panels.data = packed.data();
  panels.panel_rows = pack_panels(t, packed.data(), rb, rows);

  constexpr int kTokens = 9;
  std::vector<float> x(kTokens * cols);
  for (auto& v : x) v = gauss(rng);
  for (int k = 0; k < kTokens; ++k) x[size_t(k) * cols + rng() % cols] *= 30.0f;  // an outlier channel
  // ggml's quantized activations are Pagoda's (the same rounding); its dot of each row and token.
  std::vector<uint8_t> xq(kTokens * xb);
  std::vector<float> want(size_t(kTokens) * size_t(rows));
  for (int k = 0; k < kTokens; ++k) {
    q8->from_float(x.data() + size_t(k) * cols, xq.data() + size_t(k) * xb, int64_t(cols));
    const auto ours = quantize(TensorType::Q8_0, x.data() + size_t(k) * cols, cols);
    ASSERT_EQ(0, std::memcmp(ours.data(), xq.data() + size_t(k) * xb, xb)) << "token " << k;
    for (int r = 0; r < rows; ++r)
      mx->vec_dot(int(cols), &want[size_t(k) * size_t(rows) + size_t(r)], 0, bytes.data() + size_t(r) * rb, 0,
                  xq.data() + size_t(k) * xb, 0, 1);
  }

  ThreadPool pool(2);
  testing::for_each_simd_target([&](int64_t) {
    for (const Matrix* w : {&row_major, static_cast<const Matrix*>(&panels)})
      for (const int n_tokens : {1, 3, kTokens}) {
        std::vector<float> y(size_t(n_tokens) * size_t(rows), -1.0f);
        matmul(*w, x.data(), n_tokens, y.data(), pool);
        for (int k = 0; k < n_tokens; ++k)
          for (int r = 0; r < rows; ++r) {
            const float got = y[size_t(k) * size_t(rows) + size_t(r)];
            ASSERT_EQ(got, want[size_t(k) * size_t(rows) + size_t(r)])
                << "ggml's dot: panel rows " << w->panel_rows << " tokens " << n_tokens << " token " << k << " row "
                << r;
            // ggml's decoded row times the F32 activations, within half an
            // activation step per element (|w| d_x / 2 summed, d_x = amax / 127).
            double exact = 0, bound = 0, magnitude = 0;
            const float* wr = decoded.data() + size_t(r) * cols;
            const float* xk = x.data() + size_t(k) * cols;
            for (size_t b0 = 0; b0 < cols; b0 += kQK) {
              float amax = 0;
              for (size_t i = b0; i < b0 + kQK; ++i) amax = std::max(amax, std::fabs(xk[i]));
              for (size_t i = b0; i < b0 + kQK; ++i) {
                exact += double(wr[i]) * xk[i];
                bound += std::fabs(wr[i]) * amax / 127.0 * 0.51;
                magnitude += std::fabs(double(wr[i]) * xk[i]);
              }
            }
            ASSERT_LE(std::fabs(got - exact), bound + 1e-6 * magnitude)
                << "to_float: panel rows " << w->panel_rows << " token " << k << " row " << r;
          }
      }
  });
}

}  // namespace
}  // namespace pagoda
