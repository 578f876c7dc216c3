#include "cuda/formats.h"
#include "cuda/mmq.h"
#include "cuda/mmq_kernel.cuh"

namespace pagoda::cuda {

namespace {

// The checks both launchers share.
bool mmq_shape_ok(TensorType t, int64_t k, int n_tokens, const void* scratch, size_t scratch_bytes) {
  if (!mmq_supports(t) || n_tokens < 1 || k <= 0) return false;
  const int64_t block = detail::mmq_super_blocks(t) ? kQKK : kQK;
  if (k % block != 0) return false;
  if (scratch == nullptr || reinterpret_cast<uintptr_t>(scratch) % 4 != 0) return false;
  return scratch_bytes >= mmq_scratch_bytes(n_tokens, k);
}

// The checks both expert launchers share.
bool experts_ok(const ExpertStack& w, const void* scratch, size_t scratch_bytes, int n_x_rows, int x_per_slot,
                int max_tiles) {
  return mmq_shape_ok(w.type, w.cols, n_x_rows, scratch, scratch_bytes) && w.rows >= 0 && w.n_expert >= 1 &&
         w.stride >= 0 && x_per_slot >= 1 && max_tiles >= 0 && max_tiles <= 65535;
}

size_t expert_bytes(const ExpertStack& w) {
  return w.stride > 0 ? size_t(w.stride) : size_t(w.rows) * weight_row_bytes(w.type, w.cols);
}

// The quantized activations' arrays in a scratch buffer of n_rows rows of k (mmq_kernel.cuh's layout).
struct Q8Rows {
  const uint32_t* codes;
  const float* scales;
  const int* sums;
};
Q8Rows q8_rows(const void* scratch, int n_rows, int64_t k) {
  const auto* codes = static_cast<const uint32_t*>(scratch);
  return {codes, reinterpret_cast<const float*>(codes + detail::q8_scales_offset(n_rows, k)),
          reinterpret_cast<const int*>(codes + detail::q8_sums_offset(n_rows, k))};
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool mmq_supports(TensorType t) {
  return detail::dispatch_mmq_type(t, [](auto) { return cudaSuccess; }) == cudaSuccess;
}

int mmq_activation_block(TensorType t) {
  if (!mmq_supports(t)) return 0;
  return detail::mmq_super_blocks(t) ? kQKK : kQK;
}

size_t mmq_scratch_bytes(int n_tokens, int64_t k) {
  if (n_tokens < 1 || k <= 0) return 0;
  return size_t(n_tokens) * size_t(k) + size_t(n_tokens) * size_t(k / 32) * 8;
}

cudaError_t mmq_quantize(TensorType t, const float* x, int n_tokens, int64_t k, void* scratch, size_t scratch_bytes,
                         cudaStream_t stream) {
  if (!mmq_shape_ok(t, k, n_tokens, scratch, scratch_bytes)) return cudaErrorInvalidValue;
  const int group = detail::mmq_super_blocks(t) ? kQKK : kQK;
  const int64_t groups = int64_t(n_tokens) * (k / group);
  const int64_t blocks = (groups + detail::kQuantizeThreads - 1) / detail::kQuantizeThreads;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  auto* codes = static_cast<uint32_t*>(scratch);
  detail::quantize_q8_kernel<<<unsigned(blocks), detail::kQuantizeThreads, 0, stream>>>(
      x, n_tokens, k, group, codes, reinterpret_cast<float*>(codes + detail::q8_scales_offset(n_tokens, k)),
      reinterpret_cast<int*>(codes + detail::q8_sums_offset(n_tokens, k)));
  return cudaGetLastError();
}

cudaError_t mmq_quantized(TensorType t, const void* w, int64_t n_rows, int64_t k, const void* scratch,
                          size_t scratch_bytes, int n_tokens, float* out, cudaStream_t stream) {
  if (!mmq_shape_ok(t, k, n_tokens, scratch, scratch_bytes) || n_rows < 0) return cudaErrorInvalidValue;
  const int64_t row_tiles = detail::mmq_row_tiles(n_rows), token_tiles = detail::mmq_token_tiles(n_tokens);
  if (row_tiles > INT32_MAX || token_tiles > 65535) return cudaErrorInvalidValue;
  if (row_tiles == 0) return cudaSuccess;
  const Q8Rows x = q8_rows(scratch, n_tokens, k);
  return detail::dispatch_mmq_type(t, [&](auto format) {
    constexpr TensorType kT = decltype(format)::kType;
    detail::mmq_kernel<kT><<<dim3(unsigned(row_tiles), unsigned(token_tiles)), detail::kMmqWarps * 32, 0, stream>>>(
        static_cast<const uint8_t*>(w), weight_row_bytes(t, k), n_rows, k, x.codes, x.scales, x.sums, n_tokens, out);
    return cudaGetLastError();
  });
}

cudaError_t mmvq_quantized(TensorType t, const void* w, int64_t n_rows, int64_t k, const void* scratch,
                           size_t scratch_bytes, int n_tokens, float* out, cudaStream_t stream) {
  if (!mmq_shape_ok(t, k, n_tokens, scratch, scratch_bytes) || n_rows < 0 || n_tokens > kMaxMatvecTokens ||
      !aligned_16(scratch))
    return cudaErrorInvalidValue;
  const int64_t blocks = detail::mmvq_blocks(n_rows);
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (blocks == 0) return cudaSuccess;
  const Q8Rows x = q8_rows(scratch, n_tokens, k);
  return detail::dispatch_mmq_type(t, [&](auto format) {
    constexpr TensorType kT = decltype(format)::kType;
    detail::mmvq_kernel<kT><<<unsigned(blocks), detail::kMmvqWarps * 32, 0, stream>>>(
        static_cast<const uint8_t*>(w), weight_row_bytes(t, k), n_rows, k, x.codes, x.scales, x.sums, n_tokens, out);
    return cudaGetLastError();
  });
}

cudaError_t mmvq(TensorType t, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                 void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  if (n_rows < 0 || n_tokens > kMaxMatvecTokens) return cudaErrorInvalidValue;
  const cudaError_t e = mmq_quantize(t, x, n_tokens, k, scratch, scratch_bytes, stream);
  if (e != cudaSuccess) return e;
  return mmvq_quantized(t, w, n_rows, k, scratch, scratch_bytes, n_tokens, out, stream);
}

static_assert(kMmqExpertSlots == detail::kMmqTokens, "an expert tile is one token tile");

cudaError_t mmq_experts(const ExpertStack& w, const void* scratch, size_t scratch_bytes, int n_x_rows, int x_per_slot,
                        const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out, cudaStream_t stream) {
  if (!experts_ok(w, scratch, scratch_bytes, n_x_rows, x_per_slot, max_tiles)) return cudaErrorInvalidValue;
  const int64_t row_tiles = detail::mmq_row_tiles(w.rows);
  if (row_tiles > INT32_MAX) return cudaErrorInvalidValue;
  if (row_tiles == 0 || max_tiles == 0) return cudaSuccess;
  const Q8Rows x = q8_rows(scratch, n_x_rows, w.cols);
  return detail::dispatch_mmq_type(w.type, [&](auto format) {
    constexpr TensorType kT = decltype(format)::kType;
    detail::mmq_experts_kernel<kT>
        <<<dim3(unsigned(row_tiles), unsigned(max_tiles)), detail::kMmqWarps * 32, 0, stream>>>(
            static_cast<const uint8_t*>(w.data), expert_bytes(w), weight_row_bytes(w.type, w.cols), w.rows, w.cols,
            x.codes, x.scales, x.sums, x_per_slot, order, tiles, out);
    return cudaGetLastError();
  });
}

cudaError_t mmvq_experts(const ExpertStack& w, const void* scratch, size_t scratch_bytes, int n_x_rows, int x_per_slot,
                         const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out,
                         cudaStream_t stream) {
  if (!experts_ok(w, scratch, scratch_bytes, n_x_rows, x_per_slot, max_tiles) || !aligned_16(scratch))
    return cudaErrorInvalidValue;
  const int64_t blocks = detail::mmvq_blocks(w.rows);
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  if (blocks == 0 || max_tiles == 0) return cudaSuccess;
  const Q8Rows x = q8_rows(scratch, n_x_rows, w.cols);
  return detail::dispatch_mmq_type(w.type, [&](auto format) {
    constexpr TensorType kT = decltype(format)::kType;
    detail::mmvq_experts_kernel<kT>
        <<<dim3(unsigned(blocks), unsigned(max_tiles)), detail::kMmvqWarps * 32, 0, stream>>>(
            static_cast<const uint8_t*>(w.data), expert_bytes(w), weight_row_bytes(w.type, w.cols), w.rows, w.cols,
            x.codes, x.scales, x.sums, x_per_slot, order, tiles, out);
    return cudaGetLastError();
  });
}

cudaError_t mmq(TensorType t, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  if (n_rows < 0) return cudaErrorInvalidValue;
  const cudaError_t e = mmq_quantize(t, x, n_tokens, k, scratch, scratch_bytes, stream);
  if (e != cudaSuccess) return e;
  return mmq_quantized(t, w, n_rows, k, scratch, scratch_bytes, n_tokens, out, stream);
}

}  // namespace pagoda::cuda
