// The weight decoders of the kernels (src/cuda/decoders.cuh), run on the CPU:
// the same index and bit arithmetic the device executes, checked bit for bit
// against src/quant's scalar decoders. Needs no GPU, so it runs everywhere.
#include <random>
#include <string>
#include <vector>

#include "cuda/decoders.cuh"
#include "cuda/formats.h"
#include "cuda_test_util.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"

namespace pagoda::cuda {
namespace {

// The host pass of every decoder over a row, piece by piece.
template <class D>
std::vector<float> decode_row_on_host(const uint8_t* row, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k));
  for (int64_t c = 0; c < k / D::kChunk; ++c) D::decode(row, c, out.data() + c * D::kChunk);
  return out;
}

TEST(CudaDecodersOnHost, MatchTheScalarDecodersBitForBit) {
  std::mt19937 rng(91);
  const TensorType types[] = {TensorType::F32,   TensorType::F16,    TensorType::BF16, TensorType::Q8_0,
                              TensorType::Q4_0,  TensorType::Q5_0,   TensorType::Q5_1, TensorType::IQ4_NL,
                              TensorType::MXFP4, TensorType::Q2_K,   TensorType::Q3_K, TensorType::Q4_K,
                              TensorType::Q5_K,  TensorType::IQ4_XS, TensorType::Q6_K};
  for (TensorType t : types) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const int64_t k = block_elems(t) == 1 ? 101 : 4 * int64_t(block_elems(t));
    std::vector<uint8_t> w;
    if (block_elems(t) == 1) {
      const std::vector<float> f = testing::random_floats(size_t(k), rng);
      w = quantize(t, f.data(), f.size());
    } else {
      w = pagoda::testing::random_blocks(t, size_t(k), rng);
    }
    ASSERT_EQ(w.size(), weight_row_bytes(t, k));
    std::vector<float> ref(static_cast<size_t>(k));
    dequantize_row(t, w.data(), ref.data(), size_t(k));
    std::vector<float> got;
    const cudaError_t e = detail::dispatch_weight_type(t, [&](auto decoder) {
      got = decode_row_on_host<decltype(decoder)>(w.data(), k);
      return cudaSuccess;
    });
    ASSERT_EQ(e, cudaSuccess);
    for (int64_t i = 0; i < k; ++i) ASSERT_EQ(got[size_t(i)], ref[size_t(i)]) << "element " << i;
  }
  EXPECT_EQ(detail::dispatch_weight_type(TensorType::Q4_1, [](auto) { return cudaSuccess; }), cudaErrorInvalidValue);
  EXPECT_FALSE(cuda::weight_type_supported(TensorType::Q4_1));
}

TEST(CudaDecodersOnHost, TheIq4AndMxfp4TablesAreTheFormats) {
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(detail::iq4_value(i), kIQ4NLValues[i]) << "nibble " << i;
    EXPECT_EQ(detail::mxfp4_value(i), kMXFP4Values[i]) << "nibble " << i;
  }
}

// Every E8M0 exponent, the subnormal scales of e = 0 and 1 included: the
// device's bit patterns are mxfp4_scale's.
TEST(CudaDecodersOnHost, Mxfp4ScalesOfEveryExponent) {
  BlockMXFP4 b{};
  for (int j = 0; j < kQK / 2; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
  for (int e = 0; e < 256; ++e) {
    b.e = uint8_t(e);
    float got[kQK], want[kQK];
    detail::Decoder<TensorType::MXFP4>::decode(reinterpret_cast<const uint8_t*>(&b), 0, got);
    dequantize_row(TensorType::MXFP4, &b, want, kQK);
    for (int i = 0; i < kQK; ++i) ASSERT_EQ(got[i], want[i]) << "e " << e << " element " << i;
  }
}

}  // namespace
}  // namespace pagoda::cuda
