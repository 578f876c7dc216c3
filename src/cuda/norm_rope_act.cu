#include <cmath>

#include "cuda/device_common.cuh"
#include "cuda/norm_rope_act.h"

namespace pagoda::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token.
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(const float* x, const float* w, float* out, int n, float eps) {
  const float* xt = x + int64_t(blockIdx.x) * n;
  float* ot = out + int64_t(blockIdx.x) * n;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xt[i] * xt[i];
  ss = detail::block_sum(ss);  // synchronizes: in place is safe, each thread rewrites only what it read
  const float inv = 1.0f / sqrtf(ss / float(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) ot[i] = xt[i] * inv * w[i];
}

// One block per token; threads walk its (head, pair)s. The angle is computed in
// double, as the CPU's Rope does, so positions in the hundreds of thousands keep
// their precision. A per-layer table of frequencies would save the pow.
__global__ void __launch_bounds__(kThreads)
    rope_kernel(float* x, const int32_t* positions, int n_heads, int head_dim, int n_rot, float freq_base, bool neox,
                const float* freq_factors, float mscale) {
  const int64_t t = blockIdx.x;
  const double pos = positions[t];
  const int pairs = n_rot / 2;
  const int stride = neox ? 1 : 2, offset = neox ? pairs : 1;
  for (int idx = threadIdx.x; idx < n_heads * pairs; idx += blockDim.x) {
    const int h = idx / pairs, i = idx % pairs;
    double f = pow(double(freq_base), -2.0 * i / n_rot);
    if (freq_factors) f /= freq_factors[i];
    double sd, cd;
    sincos(pos * f, &sd, &cd);
    const float c = __fmul_rn(float(cd), mscale), s = __fmul_rn(float(sd), mscale);
    float* p = x + (t * n_heads + h) * head_dim + stride * i;
    const float a = p[0], b = p[offset];
    // Rounded as the CPU's a * c - b * s (no FMA), so both agree to the bit given the same c and s.
    p[0] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    p[offset] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
  }
}

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

// Enough blocks to fill any GPU here, fewer for small n (grid-stride loops do the rest).
unsigned elementwise_blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 4096 ? b : 4096);
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* w, float* out, int n_tokens, int n, float eps, cudaStream_t stream) {
  if (n_tokens < 0 || n <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  rms_norm_kernel<<<n_tokens, kThreads, 0, stream>>>(x, w, out, n, eps);
  return cudaGetLastError();
}

cudaError_t rope(float* x, const int32_t* positions, int n_tokens, int n_heads, int head_dim, const RopeParams& p,
                 cudaStream_t stream) {
  if (n_tokens < 0 || n_heads <= 0 || head_dim <= 0 || p.n_rot < 0 || p.n_rot % 2 != 0 || p.n_rot > head_dim)
    return cudaErrorInvalidValue;
  if (n_tokens == 0 || p.n_rot == 0) return cudaSuccess;
  rope_kernel<<<n_tokens, kThreads, 0, stream>>>(x, positions, n_heads, head_dim, p.n_rot, p.freq_base,
                                                 p.style == RopeStyle::kNeox, p.freq_factors, p.mscale);
  return cudaGetLastError();
}

cudaError_t swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  swiglu_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(gate, up, out, n);
  return cudaGetLastError();
}

cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  add_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(y, x, n);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
