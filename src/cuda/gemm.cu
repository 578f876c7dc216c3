#include "cuda/cublas_library.h"
#include "cuda/gemm.h"

namespace pagoda::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void convert_f32_to_f16_kernel(const float* x, __half* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(x[i]);
}

}  // namespace

cudaError_t convert_f32_to_f16(const float* x, __half* out, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  convert_f32_to_f16_kernel<<<unsigned(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(x, out, n);
  return cudaGetLastError();
}

cublasStatus_t gemm_f16(cublasHandle_t handle, const __half* x, const __half* w, float* out, int n_tokens, int n_rows,
                        int k, cudaStream_t stream, void* workspace, size_t workspace_bytes) {
  if (n_tokens < 0 || n_rows < 0 || k <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (n_tokens == 0 || n_rows == 0) return CUBLAS_STATUS_SUCCESS;
  const CublasLibrary& blas = cublas_library();  // opened already: the handle came from it
  if (const cublasStatus_t s = blas.set_stream(handle, stream); s != CUBLAS_STATUS_SUCCESS) return s;
  if (workspace)
    if (const cublasStatus_t s = blas.set_workspace(handle, workspace, workspace_bytes); s != CUBLAS_STATUS_SUCCESS)
      return s;
  // cuBLAS is column-major. Row-major out [n_tokens][n_rows] is the column-major
  // n_rows x n_tokens matrix C with C(r, t) = sum_i W(i, r) X(i, t), where W (the
  // bytes of w) is column-major k x n_rows, taken transposed (op T), and X (the
  // bytes of x) is column-major k x n_tokens (op N).
  const float alpha = 1.0f, beta = 0.0f;
  return blas.gemm_ex(handle, CUBLAS_OP_T, CUBLAS_OP_N, n_rows, n_tokens, k, &alpha, w, CUDA_R_16F, k, x, CUDA_R_16F, k,
                      &beta, out, CUDA_R_32F, n_rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace pagoda::cuda
