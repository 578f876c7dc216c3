// sample_rows' kernel compiled for the CPU and run there (host_emulation.h),
// with the launcher's launch shape, against sampling/row_sample.h's reference.
// Needs no GPU: the thresholds, the bisections, the draw and the block
// reductions are checked on every machine. Here expf is the host's, as the
// reference's is; the GPU test (sampling_test.cpp) runs the device's.
#include "host_emulation.h"
// The emulation's definitions first: the kernel's source uses them.
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/sampling_kernel.cuh"
#include "cuda_test_util.h"
#include "sampling_case.h"

namespace pagoda::cuda {
namespace {

std::vector<SampledRow> sample_on_host(const testing::SamplingBatch& b) {
  std::vector<float> scratch = testing::nan_floats(size_t(b.n_rows()) * 2 * size_t(b.vocab));
  std::vector<SampledRow> out = testing::poisoned_rows(b.rows.size());
  emulation::launch(dim3(unsigned(b.n_rows())), dim3(detail::kSampleThreads), detail::sample_rows_kernel,
                    b.logits.data(), scratch.data(), b.vocab, b.rows.data(), b.adjusts.data(), b.penalties.data(),
                    out.data());
  return out;
}

// Every case over small vocabularies (ties, fewer tokens than a block's
// threads) and one of 32000; each launch holds rows of different parameters.
TEST(CudaSamplingOnHost, MatchesTheReference) {
  std::mt19937 rng(401);
  for (int32_t vocab : {50, 300, 3000}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const testing::SamplingBatch b = testing::sampling_cases(vocab, rng);
    testing::expect_sampled_rows(b, sample_on_host(b));
  }
}

TEST(CudaSamplingOnHost, LargeVocabulary) {
  std::mt19937 rng(402);
  testing::SamplingBatch b;
  b.vocab = 32000;
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  b.add("top_p 0.95", testing::sampling_logits(b.vocab, rng, 3.0f),
        testing::sampling_params(1, 0, 0.95f, 0, 20, uni(rng)));
  b.add("top_k 100, min_p", testing::sampling_logits(b.vocab, rng, 2.0f, 0.125f),
        testing::sampling_params(0.6f, 100, 1, 0.01f, -1, uni(rng)));
  testing::expect_sampled_rows(b, sample_on_host(b));
}

// Uniforms over each kept set: every kept token is drawn, none outside.
TEST(CudaSamplingOnHost, DrawsTheWholeKeptSet) {
  std::mt19937 rng(403);
  for (const testing::SamplingBatch& b : testing::coverage_rows(200, rng)) {
    const std::vector<SampledRow> got = sample_on_host(b);
    testing::expect_sampled_rows(b, got);
    testing::expect_covers(b, got);
  }
}

}  // namespace
}  // namespace pagoda::cuda
