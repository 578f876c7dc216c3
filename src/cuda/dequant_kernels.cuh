// embed_rows' and dequantize_rows_f16's kernels (launchers: dequant.cu), apart
// so a test can also run them on the CPU (tests/cuda/host_emulation.h).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/decoders.cuh"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kDequantThreads = 256;

// One block per token; threads walk the row's pieces.
template <class D>
__global__ void __launch_bounds__(kDequantThreads)
    embed_rows_kernel(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const int32_t* ids, float* out) {
  const int64_t t = blockIdx.x;
  float* o = out + t * k;
  const int64_t id = ids[t];
  if (id < 0 || id >= n_rows) {
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) o[i] = NAN;
    return;
  }
  const uint8_t* row = w + size_t(id) * row_bytes;
  for (int64_t c = threadIdx.x; c < k / D::kChunk; c += blockDim.x) {
    float v[D::kChunk];
    D::decode(row, c, v);
    PAGODA_UNROLL
    for (int l = 0; l < D::kChunk; ++l) o[c * D::kChunk + l] = v[l];
  }
}

// One block per row.
template <class D>
__global__ void __launch_bounds__(kDequantThreads)
    dequantize_rows_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t k, __half* out) {
  const int64_t r = blockIdx.x;
  const uint8_t* row = w + size_t(r) * row_bytes;
  __half* o = out + r * k;
  for (int64_t c = threadIdx.x; c < k / D::kChunk; c += blockDim.x) {
    float v[D::kChunk];
    D::decode(row, c, v);
    PAGODA_UNROLL
    for (int l = 0; l < D::kChunk; ++l) o[c * D::kChunk + l] = __float2half_rn(v[l]);
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
