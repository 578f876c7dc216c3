// delta_net.h's kernels (launchers: delta_net.cu), apart so a test can also
// run them on the CPU (tests/cuda/host_emulation.h).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/delta_net.h"
#include "cuda/device_common.cuh"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kDeltaThreads = 256;  // sequence_ranges, delta_conv, delta_prepare, the element-wise ones
constexpr int kRuleWarps = 4;       // delta_rule: matrix rows per block, a warp each
constexpr int kRulePerLane = kMaxDeltaHeadDim / 32;

__global__ void sequence_ranges_kernel(const int32_t* seq_of, int n_tokens, int32_t* first, int32_t* end) {
  const int t = int(blockIdx.x) * kDeltaThreads + int(threadIdx.x);
  if (t >= n_tokens) return;
  const int32_t s = seq_of[t];
  if (t == 0 || seq_of[t - 1] != s) first[s] = t;
  if (t == n_tokens - 1 || seq_of[t + 1] != s) end[s] = t + 1;
}

// Blocks: tokens (x) by channel ranges (y). Input j of a sequence's history
// (its step tokens at K-1..): the state's row j, or token first + j - (K-1).
__global__ void __launch_bounds__(kDeltaThreads)
    delta_conv_kernel(const float* mixed, const float* conv_w, int K, int C, DeltaStates st, float* out) {
  const int t = int(blockIdx.x), c = int(blockIdx.y) * kDeltaThreads + int(threadIdx.x);
  if (c >= C) return;
  const int s = st.seq_of[t], first = st.first[s], n = st.end[s] - first;
  const float* state_in = st.in[s] < 0 ? nullptr : st.layer + int64_t(st.in[s]) * st.buffer_floats;
  auto input = [&](int j) -> float {
    if (j >= K - 1) return mixed[int64_t(first + j - (K - 1)) * C + c];
    return state_in ? state_in[int64_t(j) * C + c] : 0.0f;
  };
  const int i = t - first;
  float y = 0.0f;
  for (int tap = 0; tap < K; ++tap) y += conv_w[int64_t(tap) * C + c] * input(i + tap);
  out[int64_t(t) * C + c] = y * (1.0f / (1.0f + expf(-y)));  // silu, as the CPU rounds it
  if (t == first + n - 1 && st.out[s] >= 0) {                // the sequence's last token keeps its last K-1 inputs
    float* state_out = st.layer + int64_t(st.out[s]) * st.buffer_floats;
    for (int j = 0; j < K - 1; ++j) state_out[int64_t(j) * C + c] = input(n + j);
  }
}

// One block per token: a warp per q or k head to normalize, then a thread per value head.
__global__ void __launch_bounds__(kDeltaThreads)
    delta_prepare_kernel(float* conv, int C, int n_k_heads, int dk, float eps, float* decay, float* beta,
                         const float* a, const float* dt_bias, int n_v_heads) {
  const int64_t t = blockIdx.x;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  for (int h = warp; h < 2 * n_k_heads; h += kDeltaThreads / 32) {
    float* x = conv + t * C + int64_t(h) * dk;
    float ss = 0.0f;
    for (int i = lane; i < dk; i += 32) ss += x[i] * x[i];
    const float inv = float(1.0 / sqrt(double(warp_sum(ss)) + double(eps)));
    for (int i = lane; i < dk; i += 32) x[i] *= inv;
  }
  for (int h = int(threadIdx.x); h < n_v_heads; h += kDeltaThreads) {
    const float g = decay[t * n_v_heads + h] + dt_bias[h];
    const float softplus = g > 20.0f ? g : logf(1.0f + expf(g));  // as the CPU's (and ggml's)
    decay[t * n_v_heads + h] = expf(a[h] * softplus);
    beta[t * n_v_heads + h] = 1.0f / (1.0f + expf(-beta[t * n_v_heads + h]));
  }
}

// Blocks: sequences (x) by value heads (y) by row groups (z); a warp per row
// of S, kept in registers across the sequence's tokens (each row of the
// delta rule depends only on itself), read and written once a step.
__global__ void __launch_bounds__(kRuleWarps * 32)
    delta_rule_kernel(const float* conv, int C, int n_k_heads, int n_v_heads, int dk, int dv, const float* decay,
                      const float* beta, float scale, DeltaStates st, int64_t conv_state_floats, float* core) {
  const int s = int(blockIdx.x), h = int(blockIdx.y), lane = int(threadIdx.x) % 32;
  const int j = int(blockIdx.z) * kRuleWarps + int(threadIdx.x) / 32;
  if (j >= dv) return;  // whole warps leave, before any shuffle
  const int64_t row_at = conv_state_floats + (int64_t(h) * dv + j) * dk;
  const float* in = st.in[s] < 0 ? nullptr : st.layer + int64_t(st.in[s]) * st.buffer_floats + row_at;
  float r[kRulePerLane];
  PAGODA_UNROLL
  for (int i = 0; i < kRulePerLane; ++i) {
    const int d = lane + 32 * i;
    r[i] = in && d < dk ? in[d] : 0.0f;
  }
  const int kh = h % n_k_heads, V = n_v_heads * dv;
  for (int t = st.first[s]; t < st.end[s]; ++t) {
    const float* q = conv + int64_t(t) * C + int64_t(kh) * dk;
    const float* k = q + int64_t(n_k_heads) * dk;
    const float v = conv[int64_t(t) * C + 2 * int64_t(n_k_heads) * dk + int64_t(h) * dv + j];
    const float g = decay[int64_t(t) * n_v_heads + h], b = beta[int64_t(t) * n_v_heads + h];
    float sk = 0.0f;
    PAGODA_UNROLL
    for (int i = 0; i < kRulePerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < dk) {
        r[i] *= g;
        sk += r[i] * k[d];
      }
    }
    const float delta = b * (v - warp_sum(sk));
    float sq = 0.0f;
    PAGODA_UNROLL
    for (int i = 0; i < kRulePerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < dk) {
        r[i] += delta * k[d];
        sq += r[i] * q[d];
      }
    }
    const float o = warp_sum(sq);
    if (lane == 0) core[int64_t(t) * V + int64_t(h) * dv + j] = scale * o;
  }
  if (st.out[s] < 0) return;
  float* out = st.layer + int64_t(st.out[s]) * st.buffer_floats + row_at;
  PAGODA_UNROLL
  for (int i = 0; i < kRulePerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < dk) out[d] = r[i];
  }
}

__global__ void split_query_gate_kernel(const float* qg, int64_t n, int hd, float* q, float* gate) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t head = i / hd, d = i % hd;  // head counts over tokens too
    q[i] = qg[head * 2 * hd + d];
    gate[i] = qg[head * 2 * hd + hd + d];
  }
}

__global__ void sigmoid_gate_kernel(float* x, const float* gate, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] /= 1.0f + expf(-gate[i]);
}

}  // namespace
}  // namespace pagoda::cuda::detail
