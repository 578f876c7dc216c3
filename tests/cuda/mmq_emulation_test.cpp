// mmq's kernels (mmq_kernel.cuh) compiled for the CPU and run there
// (host_emulation.h, its warp_exchange standing in for the tensor cores'
// fragment trade), with the launch shapes mmq.cu uses: the activations must
// equal the CPU's quantization and the products its integer dot products, to
// the bit. Also the tiling: which block, warp and lane own which outputs.
#include "host_emulation.h"
// The emulation's definitions first: the kernels' source uses them.
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "cuda/formats.h"
#include "cuda/mmq.h"
#include "cuda/mmq_kernel.cuh"
#include "cuda_test_util.h"
#include "mmq_case.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"

namespace pagoda::cuda {
namespace {

// The quantize launch as mmq.cu makes it; codes, scales and sums where it put them.
struct HostActivations {
  const uint32_t* codes;
  const float* scales;
  const int* sums;
};
HostActivations quantize_on_host(TensorType t, const std::vector<float>& x, int n_tokens, int64_t k,
                                 std::vector<uint32_t>& scratch) {
  const int group = detail::mmq_super_blocks(t) ? kQKK : kQK;
  const int64_t groups = int64_t(n_tokens) * (k / group);
  scratch.assign(mmq_scratch_bytes(n_tokens, k) / 4, 0xDEADBEEFu);
  uint32_t* codes = scratch.data();
  auto* scales = reinterpret_cast<float*>(codes + detail::q8_scales_offset(n_tokens, k));
  auto* sums = reinterpret_cast<int*>(codes + detail::q8_sums_offset(n_tokens, k));
  emulation::launch(dim3(unsigned((groups + detail::kQuantizeThreads - 1) / detail::kQuantizeThreads)),
                    dim3(detail::kQuantizeThreads), detail::quantize_q8_kernel, x.data(), n_tokens, k, group, codes,
                    scales, sums);
  return {codes, scales, sums};
}

// The quantize launch and the product launch as mmq.cu makes them.
void run_mmq_on_host(TensorType t, const std::vector<uint8_t>& w, int64_t n_rows, int64_t k,
                     const std::vector<float>& x, int n_tokens, std::vector<uint32_t>& scratch,
                     std::vector<float>& out) {
  const auto [codes, scales, sums] = quantize_on_host(t, x, n_tokens, k, scratch);
  out = testing::nan_floats(size_t(n_tokens) * size_t(n_rows));
  detail::dispatch_mmq_type(t, [&](auto format) {
    constexpr TensorType kT = decltype(format)::kType;
    emulation::launch(dim3(unsigned(detail::mmq_row_tiles(n_rows)), unsigned(detail::mmq_token_tiles(n_tokens))),
                      dim3(detail::kMmqWarps * 32), detail::mmq_kernel<kT>, w.data(), weight_row_bytes(t, k), n_rows, k,
                      codes, scales, sums, n_tokens, out.data());
    return cudaSuccess;
  });
}

// Every type and token count: the activations equal quantize_row_q8_0/q8_k's,
// the products the CPU's vec_dot_scalar of the same operands (both exact),
// and within the GPU test's bound of the F16 path.
TEST(CudaMmqOnHost, MatchesTheCpuIntegerPath) {
  std::mt19937 rng(401);
  for (TensorType t : testing::kMmqTypes) {
    const int64_t k = testing::mmq_row_length(t);
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(testing::kMmqRows * k), rng);
    for (int n_tokens : testing::kMmqTokenCounts) {
      SCOPED_TRACE(std::string(tensor_type_name(t)) + ", tokens " + std::to_string(n_tokens));
      std::vector<float> x = testing::random_floats(size_t(n_tokens) * size_t(k), rng);
      for (int64_t i = 0; i < k; ++i) x[size_t(i)] = 0.0f;  // a zero token: scale 0, codes 0
      std::vector<uint32_t> scratch;
      std::vector<float> out;
      run_mmq_on_host(t, w, testing::kMmqRows, k, x, n_tokens, scratch, out);

      const testing::CpuActivations a = testing::cpu_activations(t, x, n_tokens, k);
      const size_t n_words = size_t(n_tokens) * size_t(k) / 4, n_blocks = size_t(n_tokens) * size_t(k / 32);
      const std::vector<int8_t> codes = testing::unpack_codes({scratch.begin(), scratch.begin() + n_words});
      ASSERT_EQ(codes, a.codes);
      const auto* scales = reinterpret_cast<const float*>(scratch.data() + n_words);
      const auto* sums = reinterpret_cast<const int32_t*>(scratch.data() + n_words + n_blocks);
      for (size_t b = 0; b < n_blocks; ++b) {
        ASSERT_EQ(scales[b], a.scales[b]) << "block " << b;
        ASSERT_EQ(sums[b], a.sums[b]) << "block " << b;
      }
      testing::expect_same_floats(out, testing::cpu_integer_matmul(t, w, testing::kMmqRows, k, a, n_tokens),
                                  testing::kMmqRows);
      // The bound the GPU test holds mmq to against cuBLAS's F16 path.
      std::vector<float> wf(w.size() / weight_row_bytes(t, k) * size_t(k));
      dequantize_row(t, w.data(), wf.data(), wf.size());  // whole blocks per row: one long row
      testing::expect_near_f16_path(out, testing::f16_path_in_double(wf, x, n_tokens, testing::kMmqRows, k), wf, x, a,
                                    n_tokens, testing::kMmqRows, k);
    }
  }
}

// mmvq (decode): 1 and 5 tokens, rows of more than 32 blocks (a second, partial pass of
// the lanes) and 38 rows (a partial block of warps). The CPU's integer terms, summed in
// another order: within the float rounding of a sum of that many terms.
TEST(CudaMmqOnHost, MmvqMatchesTheCpuIntegerPathUpToTheSumsOrder) {
  std::mt19937 rng(402);
  for (TensorType t : testing::kMmqTypes) {
    const int64_t k = detail::mmq_super_blocks(t) ? 6 * kQKK : 33 * kQK;
    constexpr int64_t kRows = 38;
    const std::vector<uint8_t> w = pagoda::testing::random_blocks(t, size_t(kRows * k), rng);
    std::vector<float> wf(size_t(kRows * k));
    dequantize_row(t, w.data(), wf.data(), wf.size());
    for (int n_tokens : {1, 5}) {
      SCOPED_TRACE(std::string(tensor_type_name(t)) + ", tokens " + std::to_string(n_tokens));
      const std::vector<float> x = testing::random_floats(size_t(n_tokens) * size_t(k), rng);
      std::vector<uint32_t> scratch;
      const auto [codes, scales, sums] = quantize_on_host(t, x, n_tokens, k, scratch);
      std::vector<float> out = testing::nan_floats(size_t(n_tokens) * kRows);
      detail::dispatch_mmq_type(t, [&](auto format) {
        constexpr TensorType kT = decltype(format)::kType;
        emulation::launch(dim3(unsigned(detail::mmvq_blocks(kRows))), dim3(detail::kMmvqWarps * 32),
                          detail::mmvq_kernel<kT>, w.data(), weight_row_bytes(t, k), kRows, k, codes, scales, sums,
                          n_tokens, out.data());
        return cudaSuccess;
      });
      const testing::CpuActivations a = testing::cpu_activations(t, x, n_tokens, k);
      testing::expect_near_integer_path(out, testing::cpu_integer_matmul(t, w, kRows, k, a, n_tokens), wf, x, n_tokens,
                                        kRows, k);
    }
  }
}

// Row and token tiles: how many the grid has, edges included.
TEST(CudaMmqOnHost, GridCoversRowsAndTokens) {
  EXPECT_EQ(detail::mmq_row_tiles(0), 0);
  EXPECT_EQ(detail::mmq_row_tiles(1), 1);
  EXPECT_EQ(detail::mmq_row_tiles(detail::kMmqRows), 1);
  EXPECT_EQ(detail::mmq_row_tiles(detail::kMmqRows + 1), 2);
  EXPECT_EQ(detail::mmq_row_tiles(4096), 4096 / detail::kMmqRows);
  EXPECT_EQ(detail::mmq_token_tiles(1), 1);
  EXPECT_EQ(detail::mmq_token_tiles(detail::kMmqTokens), 1);
  EXPECT_EQ(detail::mmq_token_tiles(detail::kMmqTokens + 1), 2);
  EXPECT_EQ(detail::mmq_token_tiles(64), 2);
}

// Within a block, the warps' lanes' accumulators own each (row, token) of the
// kMmqRows x kMmqTokens tile exactly once.
TEST(CudaMmqOnHost, AccumulatorsCoverTheTileOnce) {
  std::vector<int> owners(size_t(detail::kMmqRows) * detail::kMmqTokens, 0);
  for (int warp = 0; warp < detail::kMmqWarps; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int n = 0; n < detail::kMmqNTiles; ++n)
        for (int i = 0; i < 4; ++i) {
          const int r = detail::mmq_tile_row(warp, lane, i), t = detail::mmq_tile_token(n, lane, i);
          ASSERT_TRUE(r >= 0 && r < detail::kMmqRows && t >= 0 && t < detail::kMmqTokens) << r << " " << t;
          ++owners[size_t(r) * detail::kMmqTokens + t];
        }
  for (int c : owners) ASSERT_EQ(c, 1);
}

// The m16n8k32 fragment layout: A's 16 x 32, B's 32 x 8 and C's 16 x 8
// elements are each held by exactly one (lane, element).
TEST(CudaMmqOnHost, FragmentLayoutsArePermutations) {
  std::vector<int> a(16 * 32, 0), b(32 * 8, 0), c(16 * 8, 0);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i) ++a[size_t(detail::mma_a_row(lane, i)) * 32 + detail::mma_a_col(lane, i)];
    for (int i = 0; i < 8; ++i) ++b[size_t(detail::mma_b_row(lane, i)) * 8 + detail::mma_b_col(lane, i)];
    for (int i = 0; i < 4; ++i) ++c[size_t(detail::mma_c_row(lane, i)) * 8 + detail::mma_c_col(lane, i)];
  }
  for (int v : a) ASSERT_EQ(v, 1);
  for (int v : b) ASSERT_EQ(v, 1);
  for (int v : c) ASSERT_EQ(v, 1);
  // The PTX ISA's examples: lane 5 (group 1, thread 1) holds A[1][4..7] and
  // A[9][20..23], B[4..7][1] and B[20..23][1], C[1][2..3] and C[9][2..3].
  EXPECT_EQ(detail::mma_a_row(5, 0), 1);
  EXPECT_EQ(detail::mma_a_col(5, 0), 4);
  EXPECT_EQ(detail::mma_a_row(5, 15), 9);
  EXPECT_EQ(detail::mma_a_col(5, 15), 23);
  EXPECT_EQ(detail::mma_b_row(5, 7), 23);
  EXPECT_EQ(detail::mma_b_col(5, 7), 1);
  EXPECT_EQ(detail::mma_c_row(5, 3), 9);
  EXPECT_EQ(detail::mma_c_col(5, 3), 3);
}

// The scratch size, the types taken, and what the launchers refuse.
TEST(CudaMmqOnHost, LaunchersRefuseBadShapesAndTypes) {
  EXPECT_EQ(mmq_scratch_bytes(3, 256), size_t(3 * 256 + 3 * 8 * 8));
  EXPECT_EQ(mmq_scratch_bytes(0, 256), 0u);
  EXPECT_TRUE(mmq_supports(TensorType::Q8_0));
  EXPECT_TRUE(mmq_supports(TensorType::Q6_K));
  EXPECT_TRUE(mmq_supports(TensorType::MXFP4));
  EXPECT_FALSE(mmq_supports(TensorType::Q5_1));  // a min against the activations' sum per 32
  EXPECT_FALSE(mmq_supports(TensorType::Q2_K));  // mins against sums per 16
  EXPECT_FALSE(mmq_supports(TensorType::F16));
  // Refusals come before any launch, so these run without a device (the pointers are never read).
  std::vector<uint32_t> scratch(mmq_scratch_bytes(2, 512) / 4 + 1);
  const size_t bytes = mmq_scratch_bytes(2, 512);
  float f = 0;
  uint8_t wb = 0;
  EXPECT_EQ(mmq_quantize(TensorType::Q5_1, &f, 2, 512, scratch.data(), bytes, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantize(TensorType::Q4_K, &f, 2, 480, scratch.data(), bytes, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantize(TensorType::Q8_0, &f, 2, 500, scratch.data(), bytes, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantize(TensorType::Q8_0, &f, 0, 512, scratch.data(), bytes, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantize(TensorType::Q8_0, &f, 2, 512, scratch.data(), bytes - 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantize(TensorType::Q8_0, &f, 2, 512, reinterpret_cast<uint8_t*>(scratch.data()) + 1, bytes, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(mmq_quantized(TensorType::Q6_K, &wb, -1, 512, scratch.data(), bytes, 2, &f, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(mmq(TensorType::F16, &wb, 4, 512, &f, 2, &f, scratch.data(), bytes, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace pagoda::cuda
