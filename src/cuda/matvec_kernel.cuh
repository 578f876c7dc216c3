// matvec's kernel (launcher: matvec.cu), apart so a test can also run it on
// the CPU (tests/cuda/host_emulation.h). One warp per output row: its lanes
// walk the row's 32-element pieces (single elements for F32/F16), decode each
// once and use it for every token. Obvious speedups left for later: dp4a on
// Q8_1-quantized activations (llama.cpp's mmvq), 16-byte loads where a
// format's blocks are aligned, x kept in shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/decoders.cuh"
#include "cuda/device_common.cuh"
#include "cuda/matvec.h"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kMatvecWarps = 4;  // rows per block of threads

// The launch: blocks of kMatvecWarps warps, a row each (the launcher and the CPU test share it).
inline int64_t matvec_blocks(int64_t n_rows) { return (n_rows + kMatvecWarps - 1) / kMatvecWarps; }

// acc[t] += row . x_of(t) over this lane's pieces of the row (lane, lane + 32,
// ...), for t < n_tokens: each piece decoded once and used for every token.
// The caller sums acc over the warp. matvec_experts (moe_kernels.cuh) shares it.
template <class D, class X>
__device__ __forceinline__ void lane_dots(const uint8_t* row, int64_t k, int lane, int n_tokens, X x_of,
                                          float (&acc)[kMaxMatvecTokens]) {
  constexpr int C = D::kChunk;
  for (int64_t c = lane; c < k / C; c += 32) {
    float v[C];
    D::decode(row, c, v);
    // Token index t is a constant after unrolling, so acc stays in registers.
    PAGODA_UNROLL
    for (int t = 0; t < kMaxMatvecTokens; ++t) {
      if (t < n_tokens) {
        const float* xt = x_of(t) + c * C;
        float s = 0.0f;
        PAGODA_UNROLL
        for (int l = 0; l < C; ++l) s += v[l] * xt[l];
        acc[t] += s;
      }
    }
  }
}

template <class D>
__global__ void __launch_bounds__(kMatvecWarps * 32)
    matvec_kernel(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const float* x, int n_tokens,
                  float* out) {
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kMatvecWarps + threadIdx.x / 32;
  if (r >= n_rows) return;  // the whole warp leaves together, before any shuffle
  float acc[kMaxMatvecTokens] = {};
  lane_dots<D>(
      w + size_t(r) * row_bytes, k, lane, n_tokens, [&](int t) { return x + t * k; }, acc);
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0 && t < n_tokens) out[t * n_rows + r] = s;
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
