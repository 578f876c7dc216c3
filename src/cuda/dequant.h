// Weight rows decoded on the device: the embedding lookup, and whole matrices
// to F16 for the cuBLAS path (gemm.h). Weights are a GGUF-typed matrix in its
// file layout: n_rows rows of k elements, each row weight_row_bytes(type, k)
// bytes (formats.h). Every launcher returns the launch's cudaError_t
// (cudaErrorInvalidValue for an unsupported type or a bad shape) and never
// synchronizes.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gguf/types.h"

namespace pagoda::cuda {

// out[t][:] = row ids[t] of w, decoded to F32.
//   w    [n_rows][k] of type (GGUF blocks)
//   ids  [n_tokens] int32; an id outside [0, n_rows) makes its row NaN
//   out  [n_tokens][k] F32
cudaError_t embed_rows(TensorType type, const void* w, int64_t n_rows, int64_t k, const int32_t* ids, int n_tokens,
                       float* out, cudaStream_t stream);

// out = w decoded and rounded to F16 (round to nearest even; past 65504: Inf).
//   w    [n_rows][k] of type
//   out  [n_rows][k] F16
cudaError_t dequantize_rows_f16(TensorType type, const void* w, int64_t n_rows, int64_t k, __half* out,
                                cudaStream_t stream);

}  // namespace pagoda::cuda
