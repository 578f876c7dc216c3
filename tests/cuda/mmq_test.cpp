// mmq and mmvq on the GPU: the same cases as mmq_emulation_test.cpp, where the device's
// own arithmetic must still equal the CPU's integer path to the bit (every
// float step is a once-rounded mul_rn/add_rn/sub_rn, and the quantization
// rounds as src/quant does); and mmq against the F16 cuBLAS path
// (dequantize_rows_f16 + gemm_f16), within the activations' quantization error.
#include <cublas_v2.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda/cublas_library.h"
#include "cuda/dequant.h"
#include "cuda/formats.h"
#include "cuda/gemm.h"
#include "cuda/matvec.h"
#include "cuda/mmq.h"
#include "cuda_test_util.h"
#include "mmq_case.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

TEST(CudaMmq, MatchesTheCpuIntegerPath) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(411);
  for (TensorType t : testing::kMmqTypes) {
    const int64_t k = testing::mmq_row_length(t), n_rows = testing::kMmqRows;
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(n_rows * k), rng);
    DeviceBuffer<uint8_t> w_d(w);
    for (int n_tokens : testing::kMmqTokenCounts) {
      SCOPED_TRACE(std::string(tensor_type_name(t)) + ", tokens " + std::to_string(n_tokens));
      const std::vector<float> x = testing::random_floats(size_t(n_tokens) * size_t(k), rng);
      DeviceBuffer<float> x_d(x);
      const size_t scratch_bytes = mmq_scratch_bytes(n_tokens, k);
      DeviceBuffer<uint32_t> scratch_d(scratch_bytes / 4);
      DeviceBuffer<float> out_d(testing::nan_floats(size_t(n_tokens) * size_t(n_rows)));
      ASSERT_EQ(mmq(t, w_d.get(), n_rows, k, x_d.get(), n_tokens, out_d.get(), scratch_d.get(), scratch_bytes, nullptr),
                cudaSuccess);
      PAGODA_CUDA_SYNC();
      const testing::CpuActivations a = testing::cpu_activations(t, x, n_tokens, k);
      const std::vector<uint32_t> scratch = scratch_d.download();
      const size_t n_words = size_t(n_tokens) * size_t(k) / 4, n_blocks = size_t(n_tokens) * size_t(k / 32);
      ASSERT_EQ(testing::unpack_codes({scratch.begin(), scratch.begin() + n_words}), a.codes);
      const auto* scales = reinterpret_cast<const float*>(scratch.data() + n_words);
      const auto* sums = reinterpret_cast<const int32_t*>(scratch.data() + n_words + n_blocks);
      for (size_t b = 0; b < n_blocks; ++b) {
        ASSERT_EQ(scales[b], a.scales[b]) << "block " << b;
        ASSERT_EQ(sums[b], a.sums[b]) << "block " << b;
      }
      testing::expect_same_floats(out_d.download(), testing::cpu_integer_matmul(t, w, n_rows, k, a, n_tokens), n_rows);
    }
  }
}

// mmvq (decode) on the device: the CPU's integer terms summed in another
// order, within their rounding (as CudaMmqOnHost), for 1 to 8 tokens and rows
// of more than 32 blocks.
TEST(CudaMmq, MmvqMatchesTheCpuIntegerPathUpToTheSumsOrder) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(412);
  for (TensorType t : testing::kMmqTypes) {
    const int64_t k = activation_type(t) == TensorType::Q8_K ? 6 * kQKK : 33 * kQK, n_rows = testing::kMmqRows;
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(n_rows * k), rng);
    std::vector<float> wf(size_t(n_rows * k));
    dequantize_row(t, w.data(), wf.data(), wf.size());
    DeviceBuffer<uint8_t> w_d(w);
    for (int n_tokens = 1; n_tokens <= kMaxMatvecTokens; ++n_tokens) {
      SCOPED_TRACE(std::string(tensor_type_name(t)) + ", tokens " + std::to_string(n_tokens));
      const std::vector<float> x = testing::random_floats(size_t(n_tokens) * size_t(k), rng);
      DeviceBuffer<float> x_d(x);
      const size_t scratch_bytes = mmq_scratch_bytes(n_tokens, k);
      DeviceBuffer<uint32_t> scratch_d(scratch_bytes / 4);
      DeviceBuffer<float> out_d(testing::nan_floats(size_t(n_tokens) * size_t(n_rows)));
      ASSERT_EQ(
          mmvq(t, w_d.get(), n_rows, k, x_d.get(), n_tokens, out_d.get(), scratch_d.get(), scratch_bytes, nullptr),
          cudaSuccess);
      PAGODA_CUDA_SYNC();
      const testing::CpuActivations a = testing::cpu_activations(t, x, n_tokens, k);
      testing::expect_near_integer_path(out_d.download(), testing::cpu_integer_matmul(t, w, n_rows, k, a, n_tokens), wf,
                                        x, n_tokens, n_rows, k);
    }
  }
}

// mmq against the F16 path on the same weights, within the activations'
// quantization error (expect_near_f16_path; CudaMmqOnHost checks the same
// bound against the F16 path computed in double).
TEST(CudaMmq, AgreesWithTheF16CublasPath) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(412);
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublas_library().create(&handle), CUBLAS_STATUS_SUCCESS);
  for (TensorType t : testing::kMmqTypes) {
    const int64_t k = 4 * int64_t(kQKK), n_rows = 200;
    const int n_tokens = 33;
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(n_rows * k), rng);
    std::vector<float> wf(size_t(n_rows * k));
    dequantize_row(t, w.data(), wf.data(), wf.size());  // whole blocks per row: one long row
    const std::vector<float> x = testing::random_floats(size_t(n_tokens) * size_t(k), rng);
    DeviceBuffer<uint8_t> w_d(w);
    DeviceBuffer<float> x_d(x);
    const size_t scratch_bytes = mmq_scratch_bytes(n_tokens, k);
    DeviceBuffer<uint32_t> scratch_d(scratch_bytes / 4);
    DeviceBuffer<float> out_d(testing::nan_floats(size_t(n_tokens) * size_t(n_rows)));
    DeviceBuffer<float> ref_d(testing::nan_floats(size_t(n_tokens) * size_t(n_rows)));
    DeviceBuffer<uint16_t> w16_d(wf.size()), x16_d(x.size());
    auto* w16 = reinterpret_cast<__half*>(w16_d.get());
    auto* x16 = reinterpret_cast<__half*>(x16_d.get());
    ASSERT_EQ(mmq(t, w_d.get(), n_rows, k, x_d.get(), n_tokens, out_d.get(), scratch_d.get(), scratch_bytes, nullptr),
              cudaSuccess);
    ASSERT_EQ(dequantize_rows_f16(t, w_d.get(), n_rows, k, w16, nullptr), cudaSuccess);
    ASSERT_EQ(convert_f32_to_f16(x_d.get(), x16, int64_t(x.size()), nullptr), cudaSuccess);
    ASSERT_EQ(gemm_f16(handle, x16, w16, ref_d.get(), n_tokens, int(n_rows), int(k), nullptr), CUBLAS_STATUS_SUCCESS);
    PAGODA_CUDA_SYNC();
    const std::vector<float> out = out_d.download(), ref = ref_d.download();
    testing::expect_near_f16_path(out, std::vector<double>(ref.begin(), ref.end()), wf, x,
                                  testing::cpu_activations(t, x, n_tokens, k), n_tokens, n_rows, k);
  }
  cublas_library().destroy(handle);
}

}  // namespace
}  // namespace pagoda::cuda
