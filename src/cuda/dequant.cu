#include "cuda/dequant.h"
#include "cuda/dequant_kernels.cuh"
#include "cuda/formats.h"

namespace pagoda::cuda {

cudaError_t embed_rows(TensorType type, const void* w, int64_t n_rows, int64_t k, const int32_t* ids, int n_tokens,
                       float* out, cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(type, k);
  if (row_bytes == 0 || n_rows <= 0 || n_tokens < 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  return detail::dispatch_weight_type(type, [&](auto decoder) {
    using D = decltype(decoder);
    detail::embed_rows_kernel<D><<<n_tokens, detail::kDequantThreads, 0, stream>>>(static_cast<const uint8_t*>(w),
                                                                                   row_bytes, n_rows, k, ids, out);
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
    detail::dequantize_rows_f16_kernel<D>
        <<<unsigned(n_rows), detail::kDequantThreads, 0, stream>>>(static_cast<const uint8_t*>(w), row_bytes, k, out);
    return cudaGetLastError();
  });
}

}  // namespace pagoda::cuda
