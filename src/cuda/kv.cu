#include "cuda/kv.h"
#include "cuda/kv_kernels.cuh"

namespace pagoda::cuda {

cudaError_t store_kv(const float* k, const float* v, const int32_t* slot_mapping, int n_tokens, int kv_dim,
                     int row_stride, __half* k_cache, __half* v_cache, cudaStream_t stream) {
  if (n_tokens < 0 || kv_dim <= 0 || row_stride < kv_dim) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::store_kv_kernel<<<n_tokens, detail::kKvThreads, 0, stream>>>(k, v, slot_mapping, kv_dim, row_stride, k_cache,
                                                                       v_cache);
  return cudaGetLastError();
}

cudaError_t copy_blocks(__half* k_cache, __half* v_cache, const int32_t* pairs, int n_pairs, int block_size, int kv_dim,
                        cudaStream_t stream) {
  if (n_pairs < 0 || block_size <= 0 || kv_dim <= 0) return cudaErrorInvalidValue;
  if (n_pairs == 0) return cudaSuccess;
  detail::copy_blocks_kernel<<<dim3(unsigned(n_pairs), 2), detail::kKvThreads, 0, stream>>>(
      k_cache, v_cache, pairs, int64_t(block_size) * kv_dim);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* in, const int32_t* indices, int n_out, int64_t n, float* out,
                        cudaStream_t stream) {
  if (n_out < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_out == 0) return cudaSuccess;
  detail::gather_rows_kernel<<<n_out, detail::kKvThreads, 0, stream>>>(in, indices, n, out);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
