// One warp per output row: its lanes walk the row's 32-element pieces (single
// elements for F32/F16), decode each once and use it for every token. Obvious
// speedups left for later: dp4a on Q8_1-quantized activations (llama.cpp's
// mmvq), 16-byte loads where a format's blocks are aligned, x kept in shared memory.
#include "cuda/device_common.cuh"
#include "cuda/formats.h"
#include "cuda/matvec.h"

namespace pagoda::cuda {
namespace {

constexpr int kWarps = 4;  // rows per block of threads

template <class D>
__global__ void __launch_bounds__(kWarps * 32) matvec_kernel(const uint8_t* w, size_t row_bytes, int64_t n_rows,
                                                             int64_t k, const float* x, int n_tokens, float* out) {
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (r >= n_rows) return;  // the whole warp leaves together, before any shuffle
  const uint8_t* row = w + size_t(r) * row_bytes;
  constexpr int C = D::kChunk;
  float acc[kMaxMatvecTokens] = {};
  for (int64_t c = lane; c < k / C; c += 32) {
    float v[C];
    D::decode(row, c, v);
    // Token index t is a constant after unrolling, so acc stays in registers.
#pragma unroll
    for (int t = 0; t < kMaxMatvecTokens; ++t) {
      if (t < n_tokens) {
        const float* xt = x + t * k + c * C;
        float s = 0.0f;
#pragma unroll
        for (int l = 0; l < C; ++l) s += v[l] * xt[l];
        acc[t] += s;
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    const float s = detail::warp_sum(acc[t]);
    if (lane == 0 && t < n_tokens) out[t * n_rows + r] = s;
  }
}

}  // namespace

cudaError_t matvec(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                   cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(type, k);
  if (row_bytes == 0 || n_rows < 0 || n_tokens < 1 || n_tokens > kMaxMatvecTokens) return cudaErrorInvalidValue;
  const int64_t blocks = (n_rows + kWarps - 1) / kWarps;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (blocks == 0) return cudaSuccess;
  return detail::dispatch_weight_type(type, [&](auto decoder) {
    using D = decltype(decoder);
    matvec_kernel<D><<<unsigned(blocks), kWarps * 32, 0, stream>>>(static_cast<const uint8_t*>(w), row_bytes, n_rows, k,
                                                                   x, n_tokens, out);
    return cudaGetLastError();
  });
}

}  // namespace pagoda::cuda
