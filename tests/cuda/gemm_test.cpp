// The large-batch path: dequantize_rows_f16 + convert_f32_to_f16 + gemm_f16
// against a double loop over the same F16-rounded operands.
#include <cublas_v2.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/dequant.h"
#include "cuda/formats.h"
#include "cuda/cublas_library.h"
#include "cuda/gemm.h"
#include "cuda_test_util.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

TEST(CudaGemm, ConvertRoundsToNearestEven) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(51);
  std::vector<float> x = testing::random_floats(1001, rng, 100.0f);
  x[0] = 70000.0f;  // past F16's largest: Inf
  x[1] = 1e-6f;     // an F16 subnormal
  DeviceBuffer<float> x_d(x);
  DeviceBuffer<uint16_t> out_d(testing::nan_halves(x.size()));
  ASSERT_EQ(convert_f32_to_f16(x_d.get(), reinterpret_cast<__half*>(out_d.get()), int64_t(x.size()), nullptr),
            cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<uint16_t> out = out_d.download();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], f32_to_f16(x[i])) << i;
}

// Products of two F16 values are exact in F32; the error is the F32 sum's,
// at most about k * 2^-24 of sum |x w| (whatever order cuBLAS sums in).
TEST(CudaGemm, MatchesADoubleLoopOverTheF16Operands) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(52);
  const int n_rows = 37, k = 512;
  const std::vector<uint8_t> w = pagoda::testing::random_blocks(TensorType::Q4_K, size_t(n_rows) * k, rng);
  std::vector<float> wf(size_t(n_rows) * k);
  dequantize_row(TensorType::Q4_K, w.data(), wf.data(), wf.size());  // rows are whole super-blocks: one long row
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(pagoda::cuda::cublas_library().create(&handle), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer<uint8_t> w_d(w);
  DeviceBuffer<uint16_t> w16_d(testing::nan_halves(wf.size()));
  auto* w16 = reinterpret_cast<__half*>(w16_d.get());
  ASSERT_EQ(dequantize_rows_f16(TensorType::Q4_K, w_d.get(), n_rows, k, w16, nullptr), cudaSuccess);
  for (int n_tokens : {1, 13}) {
    SCOPED_TRACE("tokens " + std::to_string(n_tokens));
    const std::vector<float> x = testing::random_floats(size_t(n_tokens) * k, rng);
    DeviceBuffer<float> x_d(x);
    DeviceBuffer<uint16_t> x16_d(testing::nan_halves(x.size()));
    auto* x16 = reinterpret_cast<__half*>(x16_d.get());
    DeviceBuffer<float> out_d(testing::nan_floats(size_t(n_tokens) * n_rows));
    ASSERT_EQ(convert_f32_to_f16(x_d.get(), x16, int64_t(x.size()), nullptr), cudaSuccess);
    ASSERT_EQ(gemm_f16(handle, x16, w16, out_d.get(), n_tokens, n_rows, k, nullptr), CUBLAS_STATUS_SUCCESS);
    PAGODA_CUDA_SYNC();
    const std::vector<float> out = out_d.download();
    for (int t = 0; t < n_tokens; ++t)
      for (int r = 0; r < n_rows; ++r) {
        double dot = 0, mag = 0;
        for (int i = 0; i < k; ++i) {
          const double p =
              double(f16_to_f32(f32_to_f16(x[size_t(t) * k + i]))) * f16_to_f32(f32_to_f16(wf[size_t(r) * k + i]));
          dot += p;
          mag += std::abs(p);
        }
        ASSERT_NEAR(out[size_t(t) * n_rows + r], dot, k * 0x1p-24 * mag + 1e-30) << "token " << t << " row " << r;
      }
  }
  pagoda::cuda::cublas_library().destroy(handle);
}

}  // namespace
}  // namespace pagoda::cuda
