#include "cuda/sampling.h"
#include "cuda/sampling_kernel.cuh"

namespace pagoda::cuda {

cudaError_t sample_rows(const float* logits, float* scratch, int32_t n_rows, int32_t vocab, const RowSampling* rows,
                        const LogitAdjust* adjusts, const PenaltyEntry* penalties, SampledRow* out,
                        cudaStream_t stream) {
  if (n_rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  // adjusts and penalties may be null when no row points into them (not checked here).
  if (!logits || !scratch || !rows || !out) return cudaErrorInvalidValue;
  detail::sample_rows_kernel<<<unsigned(n_rows), detail::kSampleThreads, 0, stream>>>(logits, scratch, vocab, rows,
                                                                                      adjusts, penalties, out);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
