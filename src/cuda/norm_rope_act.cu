#include "cuda/norm_rope_act.h"
#include "cuda/norm_rope_act_kernels.cuh"

namespace pagoda::cuda {
namespace {

unsigned elementwise_blocks(int64_t n) { return detail::grid_stride_blocks(n, detail::kNormThreads); }

}  // namespace

cudaError_t rms_norm(const float* x, const float* w, float* out, int n_tokens, int n, float eps, cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::rms_norm_kernel<<<n_tokens, detail::kNormThreads, 0, stream>>>(x, w, out, n, eps);
  return cudaGetLastError();
}

cudaError_t rope(float* x, const int32_t* positions, int n_tokens, int n_heads, int head_dim, const RopeParams& p,
                 cudaStream_t stream) {
  if (n_tokens < 0 || n_heads <= 0 || head_dim <= 0 || p.n_rot < 0 || p.n_rot % 2 != 0 || p.n_rot > head_dim ||
      !(p.linear_factor > 0) || p.yarn_factor < 0)
    return cudaErrorInvalidValue;
  if (n_tokens == 0 || p.n_rot == 0) return cudaSuccess;
  detail::rope_kernel<<<n_tokens, detail::kNormThreads, 0, stream>>>(
      x, positions, n_heads, head_dim, p.n_rot, p.freq_base, p.style == RopeStyle::kNeox, p.freq_factors,
      p.linear_factor, p.mscale, p.yarn_factor, p.yarn_low, p.yarn_high);
  return cudaGetLastError();
}

cudaError_t swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::swiglu_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(gate, up, out, n);
  return cudaGetLastError();
}

cudaError_t geglu_tanh(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::geglu_tanh_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(gate, up, out, n);
  return cudaGetLastError();
}

cudaError_t swiglu_oai(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::swiglu_oai_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(gate, up, out, n);
  return cudaGetLastError();
}

cudaError_t query_temperature(float* x, const int32_t* positions, int n_tokens, int n, float temperature, int floor,
                              cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0 || floor <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::query_temperature_kernel<<<elementwise_blocks(int64_t(n_tokens) * n), detail::kNormThreads, 0, stream>>>(
      x, positions, int64_t(n_tokens) * n, n, temperature, floor);
  return cudaGetLastError();
}

cudaError_t blend(float* x, const float* y, float a, float b, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::blend_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(x, y, a, b, n);
  return cudaGetLastError();
}

cudaError_t gelu_times(float* g, const float* in, int n_tokens, int n, int64_t in_stride, cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0 || in_stride < n) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::gelu_times_kernel<<<elementwise_blocks(int64_t(n_tokens) * n), detail::kNormThreads, 0, stream>>>(
      g, in, int64_t(n_tokens) * n, n, in_stride);
  return cudaGetLastError();
}

cudaError_t scale(float* x, float s, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::scale_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(x, s, n);
  return cudaGetLastError();
}

cudaError_t scale_softcap(float* x, float s, float cap, int64_t n, cudaStream_t stream) {
  if (n < 0 || cap < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::scale_softcap_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(x, s, cap, n);
  return cudaGetLastError();
}

cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::add_kernel<<<elementwise_blocks(n), detail::kNormThreads, 0, stream>>>(y, x, n);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
