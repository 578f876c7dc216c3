// Sampling on the device (issue 40): each logits row is sampled where it was
// computed, so only the token and its logprobs come back, not [vocab] floats.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "sampling/row_sample.h"

namespace pagoda::cuda {

// Samples rows [n_rows] of logits [n_rows][vocab] by rows[n_rows]
// (sampling/row_sample.h); adjusts and penalties are the step's lists the
// rows point into; scratch: [n_rows][2 * vocab] floats; out: [n_rows].
// Checks its arguments (cudaErrorInvalidValue), launches, returns cudaGetLastError().
// out[r] equals sample_row_reference() of row r, up to the device's expf and
// the order of its double sums (a uniform within rounding of a boundary may
// draw the neighbouring token). All pointers are device memory; the entries'
// tokens must be unique within a row (out-of-range ones are skipped).
cudaError_t sample_rows(const float* logits, float* scratch, int32_t n_rows, int32_t vocab, const RowSampling* rows,
                        const LogitAdjust* adjusts, const PenaltyEntry* penalties, SampledRow* out,
                        cudaStream_t stream);

}  // namespace pagoda::cuda
