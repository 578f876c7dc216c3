// Device helpers the kernels share: reductions, and (decoders.cuh) one
// decoder per weight type. Included by .cu files only.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/decoders.cuh"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {

__device__ __forceinline__ float warp_sum(float v) {
  PAGODA_UNROLL
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum over a block of up to 1024 threads, returned to every thread.
// Every thread of the block must call it (it synchronizes).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < int((blockDim.x + 31) / 32) ? partial[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  return total;
}

// Blocks for a grid-stride loop over n elements of `threads` a block: enough
// to fill any GPU here, fewer for small n (the loop does the rest).
inline unsigned grid_stride_blocks(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 4096 ? b : 4096);
}

}  // namespace pagoda::cuda::detail
