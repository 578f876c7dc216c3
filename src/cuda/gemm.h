// The large-batch path (prefill): weights decoded once to F16
// (dequantize_rows_f16, dequant.h), activations converted to F16, and a
// cuBLAS GEMM with F32 accumulation and F32 output.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda {

// out[i] = x[i] rounded to F16 (nearest even).
//   x    [n] F32
//   out  [n] F16
cudaError_t convert_f32_to_f16(const float* x, __half* out, int64_t n, cudaStream_t stream);

// out[t][r] = sum_i x[t][i] * w[r][i] (out = x W^T), F16 inputs, F32 accumulation.
//   x    [n_tokens][k] F16
//   w    [n_rows][k] F16 (row-major, as dequantize_rows_f16 writes it)
//   out  [n_tokens][n_rows] F32
// Runs on `stream` (set on the handle for this call). Returns cuBLAS's status.
// `handle` comes from cublas_library().create (cublas_library.h). A
// `workspace` of `workspace_bytes` is set on the handle after the stream
// (setting a stream resets it): what a GEMM captured into a CUDA graph uses.
cublasStatus_t gemm_f16(cublasHandle_t handle, const __half* x, const __half* w, float* out, int n_tokens, int n_rows,
                        int k, cudaStream_t stream, void* workspace = nullptr, size_t workspace_bytes = 0);

}  // namespace pagoda::cuda
