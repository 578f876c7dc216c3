#include <cmath>

#include "cuda/dequant.h"
#include "cuda/device_common.cuh"
#include "cuda/formats.h"

namespace pagoda::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token; threads walk the row's pieces.
template <class D>
__global__ void __launch_bounds__(kThreads)
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
#pragma unroll
    for (int l = 0; l < D::kChunk; ++l) o[c * D::kChunk + l] = v[l];
  }
}

// One block per row.
template <class D>
__global__ void __launch_bounds__(kThreads)
    dequantize_rows_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t k, __half* out) {
  const int64_t r = blockIdx.x;
  const uint8_t* row = w + size_t(r) * row_bytes;
  __half* o = out + r * k;
  for (int64_t c = threadIdx.x; c < k / D::kChunk; c += blockDim.x) {
    float v[D::kChunk];
    D::decode(row, c, v);
#pragma unroll
    for (int l = 0; l < D::kChunk; ++l) o[c * D::kChunk + l] = __float2half_rn(v[l]);
  }
}

}  // namespace

cudaError_t embed_rows(TensorType type, const void* w, int64_t n_rows, int64_t k, const int32_t* ids, int n_tokens,
                       float* out, cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(type, k);
  if (row_bytes == 0 || n_rows <= 0 || n_tokens < 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  return detail::dispatch_weight_type(type, [&](auto decoder) {
    using D = decltype(decoder);
    embed_rows_kernel<D>
        <<<n_tokens, kThreads, 0, stream>>>(static_cast<const uint8_t*>(w), row_bytes, n_rows, k, ids, out);
    return cudaGetLastError();
  });
}

cudaError_t dequantize_rows_f16(TensorType type, const void* w, int64_t n_rows, int64_t k, __half* out,
                                cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(type, k);
  if (row_bytes == 0 || n_rows < 0 || n_rows > INT32_MAX) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::dispatch_weight_type(type, [&](auto decoder) {
    using D = decltype(decoder);
    dequantize_rows_f16_kernel<D>
        <<<unsigned(n_rows), kThreads, 0, stream>>>(static_cast<const uint8_t*>(w), row_bytes, k, out);
    return cudaGetLastError();
  });
}

}  // namespace pagoda::cuda
