#include "cuda/device_common.cuh"
#include "cuda/kv.h"

namespace pagoda::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token.
__global__ void __launch_bounds__(kThreads) store_kv_kernel(const float* k, const float* v, const int32_t* slot_mapping,
                                                            int kv_dim, __half* k_cache, __half* v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_cache[slot * kv_dim + i] = __float2half_rn(k[t * kv_dim + i]);
    v_cache[slot * kv_dim + i] = __float2half_rn(v[t * kv_dim + i]);
  }
}

// Block (p, 0) copies pair p's K block, (p, 1) its V block.
__global__ void __launch_bounds__(kThreads)
    copy_blocks_kernel(__half* k_cache, __half* v_cache, const int32_t* pairs, int64_t block_elems) {
  __half* cache = blockIdx.y == 0 ? k_cache : v_cache;
  const int64_t src = pairs[2 * blockIdx.x], dst = pairs[2 * blockIdx.x + 1];
  const __half* from = cache + src * block_elems;
  __half* to = cache + dst * block_elems;
  for (int64_t i = threadIdx.x; i < block_elems; i += blockDim.x) to[i] = from[i];
}

// One block per output row.
__global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const float* in, const int32_t* indices, int64_t n, float* out) {
  const float* from = in + int64_t(indices[blockIdx.x]) * n;
  float* to = out + int64_t(blockIdx.x) * n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}

}  // namespace

cudaError_t store_kv(const float* k, const float* v, const int32_t* slot_mapping, int n_tokens, int kv_dim,
                     __half* k_cache, __half* v_cache, cudaStream_t stream) {
  if (n_tokens < 0 || kv_dim <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  store_kv_kernel<<<n_tokens, kThreads, 0, stream>>>(k, v, slot_mapping, kv_dim, k_cache, v_cache);
  return cudaGetLastError();
}

cudaError_t copy_blocks(__half* k_cache, __half* v_cache, const int32_t* pairs, int n_pairs, int block_size, int kv_dim,
                        cudaStream_t stream) {
  if (n_pairs < 0 || block_size <= 0 || kv_dim <= 0) return cudaErrorInvalidValue;
  if (n_pairs == 0) return cudaSuccess;
  copy_blocks_kernel<<<dim3(unsigned(n_pairs), 2), kThreads, 0, stream>>>(k_cache, v_cache, pairs,
                                                                          int64_t(block_size) * kv_dim);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* in, const int32_t* indices, int n_out, int64_t n, float* out,
                        cudaStream_t stream) {
  if (n_out < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_out == 0) return cudaSuccess;
  gather_rows_kernel<<<n_out, kThreads, 0, stream>>>(in, indices, n, out);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
