#include <algorithm>

#include "cuda/formats.h"
#include "cuda/moe.h"
#include "cuda/moe_kernels.cuh"

namespace pagoda::cuda {
namespace {

unsigned elementwise_blocks(int64_t n) { return detail::grid_stride_blocks(n, detail::kMoeThreads); }

}  // namespace

cudaError_t moe_route(const float* logits, int n_tokens, const MoeRouting& r, int32_t* experts, float* weights,
                      cudaStream_t stream) {
  if (n_tokens < 0 || r.n_expert < 1 || r.n_expert > kMaxExperts || r.n_used < 1 ||
      r.n_used > std::min(r.n_expert, kMaxExpertsUsed))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  const unsigned blocks = unsigned((n_tokens + detail::kRouteThreads - 1) / detail::kRouteThreads);
  detail::moe_route_kernel<<<blocks, detail::kRouteThreads, 0, stream>>>(
      logits, n_tokens, r.n_expert, r.n_used, r.softmax_first, r.normalize, r.scale, experts, weights);
  return cudaGetLastError();
}

cudaError_t moe_group(const int32_t* experts, int n_slots, int n_expert, int tile_slots, int32_t* order,
                      ExpertTile* tiles, int max_tiles, cudaStream_t stream) {
  if (n_slots < 0 || n_expert < 1 || n_expert > kMaxExperts || tile_slots < 1 ||
      max_tiles < max_expert_tiles(n_slots, n_expert, tile_slots))
    return cudaErrorInvalidValue;
  if (n_slots == 0) return cudaSuccess;
  detail::moe_group_kernel<<<1, detail::kGroupThreads, 0, stream>>>(experts, n_slots, n_expert, tile_slots, order,
                                                                    tiles, max_tiles);
  return cudaGetLastError();
}

cudaError_t matvec_experts(const ExpertStack& w, const float* x, int x_per_slot, const int32_t* order,
                           const ExpertTile* tiles, int max_tiles, float* out, cudaStream_t stream) {
  const size_t row_bytes = weight_row_bytes(w.type, w.cols);
  const int64_t blocks = detail::matvec_blocks(w.rows);
  if (row_bytes == 0 || w.rows < 0 || w.n_expert < 1 || w.stride < 0 || x_per_slot < 1 || max_tiles < 0 ||
      max_tiles > 65535 || blocks > INT32_MAX)
    return cudaErrorInvalidValue;
  if (blocks == 0 || max_tiles == 0) return cudaSuccess;
  return detail::dispatch_weight_type(w.type, [&](auto decoder) {
    using D = decltype(decoder);
    detail::matvec_experts_kernel<D>
        <<<dim3(unsigned(blocks), unsigned(max_tiles)), detail::kMatvecWarps * 32, 0, stream>>>(
            static_cast<const uint8_t*>(w.data), w.stride > 0 ? size_t(w.stride) : size_t(w.rows) * row_bytes,
            row_bytes, w.rows, w.cols, x, x_per_slot, order, tiles, out);
    return cudaGetLastError();
  });
}

cudaError_t add_expert_bias(float* y, const float* bias, const int32_t* experts, int n_slots, int n,
                            cudaStream_t stream) {
  if (n_slots < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_slots == 0) return cudaSuccess;
  detail::add_expert_bias_kernel<<<elementwise_blocks(int64_t(n_slots) * n), detail::kMoeThreads, 0, stream>>>(
      y, bias, experts, n_slots, n);
  return cudaGetLastError();
}

cudaError_t moe_combine(const float* y, const int32_t* experts, const float* weights, const float* expert_scale,
                        int n_tokens, int n_used, int n, float* out, cudaStream_t stream) {
  if (n_tokens < 0 || n_used < 1 || n <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::moe_combine_kernel<<<elementwise_blocks(int64_t(n_tokens) * n), detail::kMoeThreads, 0, stream>>>(
      y, experts, weights, expert_scale, n_tokens, n_used, n, out);
  return cudaGetLastError();
}

cudaError_t row_dot(const float* x, const float* w, int n_tokens, int n, float* logit, cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::row_dot_kernel<<<unsigned(n_tokens), detail::kMoeThreads, 0, stream>>>(x, w, n, logit);
  return cudaGetLastError();
}

cudaError_t add_gated(float* out, const float* y, const float* logit, int n_tokens, int n, cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::add_gated_kernel<<<elementwise_blocks(int64_t(n_tokens) * n), detail::kMoeThreads, 0, stream>>>(out, y, logit,
                                                                                                          n_tokens, n);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
