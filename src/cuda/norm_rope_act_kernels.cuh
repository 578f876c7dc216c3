// rms_norm's, rope's, swiglu's, swiglu_oai's, geglu_tanh's, query_temperature's, scale's, scale_softcap's and add's
// kernels (launchers: norm_rope_act.cu), apart so a test can also run them on the CPU (tests/cuda/host_emulation.h).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/device_common.cuh"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kNormThreads = 256;

// One block per token.
__global__ void __launch_bounds__(kNormThreads)
    rms_norm_kernel(const float* x, const float* w, float* out, int n, float eps) {
  const float* xt = x + int64_t(blockIdx.x) * n;
  float* ot = out + int64_t(blockIdx.x) * n;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xt[i] * xt[i];
  ss = block_sum(ss);  // synchronizes: in place is safe, each thread rewrites only what it read
  const float inv = 1.0f / sqrtf(ss / float(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) ot[i] = w ? xt[i] * inv * w[i] : xt[i] * inv;
}

// One block per token; threads walk its (head, pair)s. The angle is computed in
// double, as the CPU's Rope does, so positions in the hundreds of thousands keep
// their precision. A per-layer table of frequencies would save the pow.
__global__ void __launch_bounds__(kNormThreads)
    rope_kernel(float* x, const int32_t* positions, int n_heads, int head_dim, int n_rot, float freq_base, bool neox,
                const float* freq_factors, float linear_factor, float mscale, float yarn_factor, double yarn_low,
                double yarn_high) {
  const int64_t t = blockIdx.x;
  const double pos = positions[t];
  const int pairs = n_rot / 2;
  const int stride = neox ? 1 : 2, offset = neox ? pairs : 1;
  for (int idx = threadIdx.x; idx < n_heads * pairs; idx += blockDim.x) {
    const int h = idx / pairs, i = idx % pairs;
    double f = pow(double(freq_base), -2.0 * i / n_rot);
    if (freq_factors) f /= freq_factors[i];
    f /= double(linear_factor);  // as the CPU's Rope divides for linear scaling (exact when 1)
    if (yarn_factor > 0) {       // the ramp from interpolated (slow pairs) to kept (fast ones)
      const double e = 1 - fmin(fmax((i - yarn_low) / fmax(0.001, yarn_high - yarn_low), 0.0), 1.0);
      f *= (1 - e) / double(yarn_factor) + e;
    }
    double sd, cd;
    sincos(pos * f, &sd, &cd);
    const float c = mul_rn(float(cd), mscale), s = mul_rn(float(sd), mscale);
    float* p = x + (t * n_heads + h) * head_dim + stride * i;
    const float a = p[0], b = p[offset];
    // Rounded as the CPU's a * c - b * s (no FMA), so both agree to the bit given the same c and s.
    p[0] = sub_rn(mul_rn(a, c), mul_rn(b, s));
    p[offset] = add_rn(mul_rn(a, s), mul_rn(b, c));
  }
}

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

// The CPU's (model/ops.cpp gated_activation): the clamps, then g * sigmoid(1.702 g) * (u + 1).
__global__ void swiglu_oai_kernel(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = fminf(gate[i], kLimit), u = fminf(fmaxf(up[i], -kLimit), kLimit);
    out[i] = g / (1.0f + expf(mul_rn(-kAlpha, g))) * add_rn(u, 1.0f);
  }
}

// The CPU's formula (kernels/activations.cpp): 0.5 x (1 + tanh(k * (c x^2 * x + x))) * up,
// its x + c x^3 one fused multiply-add as Highway's MulAdd is on FMA targets.
__global__ void geglu_tanh_kernel(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCoef = 0.044715f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = gate[i];
    const float inner = mul_rn(kSqrt2OverPi, fmaf(mul_rn(kCoef, mul_rn(x, x)), x, x));
    out[i] = mul_rn(mul_rn(mul_rn(0.5f, x), add_rn(1.0f, tanhf(inner))), up[i]);
  }
}

__global__ void query_temperature_kernel(float* x, const int32_t* positions, int64_t total, int n, float temperature,
                                         int floor) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const float pos = float(positions[i / n]);
    x[i] *= 1.0f + temperature * logf(floorf(pos / float(floor)) + 1.0f);
  }
}

__global__ void blend_kernel(float* x, const float* y, float a, float b, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = (x[i] + y[i] * a) * b;
}

__global__ void gelu_times_kernel(float* g, const float* in, int64_t total, int n, int64_t in_stride) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f, kCoef = 0.044715f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = g[i];
    g[i] = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kCoef * x * x))) * in[(i / n) * in_stride + i % n];
  }
}

__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

__global__ void scale_softcap_kernel(float* x, float s, float cap, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float z = x[i] * s;
    x[i] = cap > 0 ? cap * tanhf(z / cap) : z;
  }
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

}  // namespace
}  // namespace pagoda::cuda::detail
