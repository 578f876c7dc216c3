// store_kv's, copy_blocks' and gather_rows' kernels (launchers: kv.cu), apart
// so a test can also run them on the CPU (tests/cuda/host_emulation.h).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kKvThreads = 256;

// One block per token.
__global__ void __launch_bounds__(kKvThreads)
    store_kv_kernel(const float* k, const float* v, const int32_t* slot_mapping, int kv_dim, int row_stride,
                    __half* k_cache, __half* v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_cache[slot * row_stride + i] = __float2half_rn(k[t * kv_dim + i]);
    v_cache[slot * row_stride + i] = __float2half_rn(v[t * kv_dim + i]);
  }
}

// Block (p, 0) copies pair p's K block, (p, 1) its V block.
__global__ void __launch_bounds__(kKvThreads)
    copy_blocks_kernel(__half* k_cache, __half* v_cache, const int32_t* pairs, int64_t block_elems) {
  __half* cache = blockIdx.y == 0 ? k_cache : v_cache;
  const int64_t src = pairs[2 * blockIdx.x], dst = pairs[2 * blockIdx.x + 1];
  const __half* from = cache + src * block_elems;
  __half* to = cache + dst * block_elems;
  for (int64_t i = threadIdx.x; i < block_elems; i += blockDim.x) to[i] = from[i];
}

// One block per output row.
__global__ void __launch_bounds__(kKvThreads)
    gather_rows_kernel(const float* in, const int32_t* indices, int64_t n, float* out) {
  const float* from = in + int64_t(indices[blockIdx.x]) * n;
  float* to = out + int64_t(blockIdx.x) * n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}

}  // namespace
}  // namespace pagoda::cuda::detail
