#include "cuda/formats.h"
#include "cuda/matvec.h"
#include "cuda/matvec_kernel.cuh"

namespace pagoda::cuda {

cudaError_t matvec(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                   cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(type, k);
  if (row_bytes == 0 || n_rows < 0 || n_tokens < 1 || n_tokens > kMaxMatvecTokens) return cudaErrorInvalidValue;
  const int64_t blocks = detail::matvec_blocks(n_rows);
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (blocks == 0) return cudaSuccess;
  return detail::dispatch_weight_type(type, [&](auto decoder) {
    using D = decltype(decoder);
    detail::matvec_kernel<D><<<unsigned(blocks), detail::kMatvecWarps * 32, 0, stream>>>(
        static_cast<const uint8_t*>(w), row_bytes, n_rows, k, x, n_tokens, out);
    return cudaGetLastError();
  });
}

}  // namespace pagoda::cuda
