// Quantized matrix times a few vectors (decode steps and small batches): the
// weights stay in their GGUF blocks and are decoded on the fly.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gguf/types.h"

namespace pagoda::cuda {

// The most tokens one matvec launch takes; larger batches go through
// dequantize_rows_f16 + gemm_f16 (gemm.h), or several launches.
inline constexpr int kMaxMatvecTokens = 8;

// out[t][r] = sum_i w[r][i] * x[t][i], accumulated in F32.
//   w    [n_rows][k] of a type formats.h lists (GGUF blocks)
//   x    [n_tokens][k] F32
//   out  [n_tokens][n_rows] F32 (must not overlap x)
// n_tokens in 1..kMaxMatvecTokens; cudaErrorInvalidValue otherwise, or for an
// unsupported type, or k not a multiple of the type's block size.
cudaError_t matvec(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                   cudaStream_t stream);

}  // namespace pagoda::cuda
