// sample_rows on the device against sampling/row_sample.h's reference: the
// cases of sampling_emulation_test.cpp, with the device's expf and its order
// of sums (sampling_case.h says what may differ).
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/sampling.h"
#include "cuda_test_util.h"
#include "sampling_case.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

std::vector<SampledRow> sample_on_device(const testing::SamplingBatch& b) {
  DeviceBuffer<float> logits(b.logits), scratch(testing::nan_floats(size_t(b.n_rows()) * 2 * size_t(b.vocab)));
  DeviceBuffer<RowSampling> rows(b.rows);
  DeviceBuffer<LogitAdjust> adjusts(b.adjusts);
  DeviceBuffer<PenaltyEntry> penalties(b.penalties);
  DeviceBuffer<SampledRow> out(testing::poisoned_rows(b.rows.size()));
  testing::check_cuda(sample_rows(logits.get(), scratch.get(), b.n_rows(), b.vocab, rows.get(), adjusts.get(),
                                  penalties.get(), out.get(), nullptr),
                      "sample_rows");
  testing::check_cuda(cudaDeviceSynchronize(), "sample_rows' kernel");
  return out.download();
}

TEST(CudaSampling, MatchesTheReference) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(401);
  for (int32_t vocab : {50, 300, 3000, 151936}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const testing::SamplingBatch b = testing::sampling_cases(vocab, rng);
    testing::expect_sampled_rows(b, sample_on_device(b));
  }
}

TEST(CudaSampling, LargeVocabulary) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(402);
  testing::SamplingBatch b;
  b.vocab = 32000;
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  for (int i = 0; i < 20; ++i) {
    b.add("top_p 0.95", testing::sampling_logits(b.vocab, rng, 3.0f),
          testing::sampling_params(1, 0, 0.95f, 0, 20, uni(rng)));
    b.add("top_k 100, min_p", testing::sampling_logits(b.vocab, rng, 2.0f, 0.125f),
          testing::sampling_params(0.6f, 100, 1, 0.01f, -1, uni(rng)));
  }
  testing::expect_sampled_rows(b, sample_on_device(b));
}

TEST(CudaSampling, DrawsTheWholeKeptSet) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(403);
  for (int32_t vocab : {200, 5000}) {
    for (const testing::SamplingBatch& b : testing::coverage_rows(vocab, rng)) {
      const std::vector<SampledRow> got = sample_on_device(b);
      testing::expect_sampled_rows(b, got);
      testing::expect_covers(b, got);
    }
  }
}

// Bad shapes and missing buffers are refused before any launch (no device needed).
TEST(CudaSampling, ChecksItsArguments) {
  float f = 0;
  RowSampling row;
  SampledRow out;
  EXPECT_EQ(sample_rows(&f, &f, 1, 0, &row, nullptr, nullptr, &out, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(&f, &f, -1, 8, &row, nullptr, nullptr, &out, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(nullptr, &f, 1, 8, &row, nullptr, nullptr, &out, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(&f, nullptr, 1, 8, &row, nullptr, nullptr, &out, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(&f, &f, 1, 8, nullptr, nullptr, nullptr, &out, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(&f, &f, 1, 8, &row, nullptr, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(sample_rows(nullptr, nullptr, 0, 8, nullptr, nullptr, nullptr, nullptr, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace pagoda::cuda
