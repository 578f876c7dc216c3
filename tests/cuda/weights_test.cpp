// embed_rows, dequantize_rows_f16 and matvec against src/quant's scalar
// decoders, for every weight type the kernels take.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/dequant.h"
#include "cuda/formats.h"
#include "cuda/matvec.h"
#include "cuda_test_util.h"
#include "quant/rows.h"
#include "weights_case.h"

namespace pagoda::cuda {
namespace {

using testing::decode_cpu;
using testing::DeviceBuffer;
using testing::kRows;
using testing::kWeightTypes;
using testing::random_weights;
using testing::row_length;

TEST(CudaWeights, RowBytesMatchTheCpuLayout) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  for (TensorType t : kWeightTypes) EXPECT_EQ(weight_row_bytes(t, row_length(t)), row_bytes(t, size_t(row_length(t))));
  EXPECT_EQ(weight_row_bytes(TensorType::Q4_K, 100), 0u);  // not a whole super-block
  EXPECT_EQ(weight_row_bytes(TensorType::Q4_1, 32), 0u);   // not decoded here
}

// Bit-exact: the kernels round every step as the scalar decoders do.
TEST(CudaWeights, EmbedRowsMatchesTheScalarDecoders) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(39);
  for (TensorType t : kWeightTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const int64_t k = row_length(t);
    const std::vector<uint8_t> w = random_weights(t, kRows, k, rng);
    const std::vector<float> ref = decode_cpu(t, w, kRows, k);
    for (const std::vector<int32_t>& ids : {std::vector<int32_t>{36}, std::vector<int32_t>{5, 36, 0, 5, 17, 2, 30}}) {
      DeviceBuffer<uint8_t> w_d(w);
      DeviceBuffer<int32_t> ids_d(ids);
      DeviceBuffer<float> out_d(testing::nan_floats(ids.size() * size_t(k)));
      ASSERT_EQ(embed_rows(t, w_d.get(), kRows, k, ids_d.get(), int(ids.size()), out_d.get(), nullptr), cudaSuccess);
      PAGODA_CUDA_SYNC();
      const std::vector<float> out = out_d.download();
      for (size_t i = 0; i < ids.size(); ++i)
        for (int64_t j = 0; j < k; ++j)
          ASSERT_EQ(out[i * k + j], ref[ids[i] * k + j]) << "token " << i << " element " << j;
    }
  }
}

TEST(CudaWeights, EmbedRowsMarksAnIdOutOfRangeWithNaN) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(40);
  const int64_t k = 256;
  const std::vector<uint8_t> w = random_weights(TensorType::Q4_K, kRows, k, rng);
  const std::vector<float> ref = decode_cpu(TensorType::Q4_K, w, kRows, k);
  DeviceBuffer<uint8_t> w_d(w);
  DeviceBuffer<int32_t> ids_d(std::vector<int32_t>{3, -1, int32_t(kRows)});
  DeviceBuffer<float> out_d(std::vector<float>(3 * k, 0.0f));
  ASSERT_EQ(embed_rows(TensorType::Q4_K, w_d.get(), kRows, k, ids_d.get(), 3, out_d.get(), nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> out = out_d.download();
  for (int64_t j = 0; j < k; ++j) {
    ASSERT_EQ(out[j], ref[3 * k + j]);
    ASSERT_TRUE(std::isnan(out[k + j]) && std::isnan(out[2 * k + j])) << j;
  }
}

// Exact: one round-to-nearest-even of the same F32 value (util/half.h's
// f32_to_f16 rounds as __float2half_rn does).
TEST(CudaWeights, DequantizeRowsF16IsTheDecodedValueRounded) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (TensorType t : kWeightTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const int64_t k = row_length(t);
    const std::vector<uint8_t> w = random_weights(t, kRows, k, rng);
    const std::vector<float> ref = decode_cpu(t, w, kRows, k);
    DeviceBuffer<uint8_t> w_d(w);
    DeviceBuffer<uint16_t> out_d(testing::nan_halves(ref.size()));
    ASSERT_EQ(dequantize_rows_f16(t, w_d.get(), kRows, k, reinterpret_cast<__half*>(out_d.get()), nullptr),
              cudaSuccess);
    PAGODA_CUDA_SYNC();
    const std::vector<uint16_t> out = out_d.download();
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(out[i], f32_to_f16(ref[i])) << "element " << i;
  }
}

// Against a double-precision dot of the CPU-decoded rows (expect_matvec_matches: the bound).
TEST(CudaWeights, MatvecMatchesADoubleDotOfTheDecodedRows) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(42);
  for (TensorType t : kWeightTypes) {
    const int64_t k = row_length(t);
    const std::vector<uint8_t> w = random_weights(t, kRows, k, rng);
    const std::vector<float> wf = decode_cpu(t, w, kRows, k);
    DeviceBuffer<uint8_t> w_d(w);
    for (int n_tokens : {1, 7, kMaxMatvecTokens}) {
      SCOPED_TRACE(std::string(tensor_type_name(t)) + " tokens " + std::to_string(n_tokens));
      const std::vector<float> x = testing::random_floats(size_t(n_tokens * k), rng);
      DeviceBuffer<float> x_d(x);
      DeviceBuffer<float> out_d(testing::nan_floats(size_t(n_tokens * kRows)));
      ASSERT_EQ(matvec(t, w_d.get(), kRows, k, x_d.get(), n_tokens, out_d.get(), nullptr), cudaSuccess);
      PAGODA_CUDA_SYNC();
      testing::expect_matvec_matches(wf, x, out_d.download(), n_tokens, kRows, k);
    }
  }
}

TEST(CudaWeights, LaunchersRefuseBadShapesAndTypes) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  DeviceBuffer<float> buf(4096);
  EXPECT_EQ(matvec(TensorType::Q8_0, buf.get(), 4, 64, buf.get(), kMaxMatvecTokens + 1, buf.get(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(matvec(TensorType::Q8_0, buf.get(), 4, 64, buf.get(), 0, buf.get(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(matvec(TensorType::Q4_1, buf.get(), 4, 256, buf.get(), 1, buf.get(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(matvec(TensorType::Q4_0, buf.get(), 4, 48, buf.get(), 1, buf.get(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(dequantize_rows_f16(TensorType::Q6_K, buf.get(), 2, 100, reinterpret_cast<__half*>(buf.get()), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // nothing was launched, nothing left behind
}

}  // namespace
}  // namespace pagoda::cuda
