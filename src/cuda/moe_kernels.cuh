// moe.h's kernels (launchers: moe.cu), apart so a test can also run them on
// the CPU (tests/cuda/host_emulation.h). None uses atomics: the grouping is a
// counting sort in one block whose threads each own an expert, so the order
// of a step's slots, and with it every launch, is the same on every run.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/device_common.cuh"
#include "cuda/matvec_kernel.cuh"
#include "cuda/moe.h"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kRouteThreads = 64;   // tokens per block of moe_route
constexpr int kGroupThreads = 256;  // moe_group's one block
constexpr int kGroupChunk = 1024;   // slots it reads into shared memory at a time
constexpr int kMoeThreads = 256;    // the element-wise kernels

// Softmax of v[0..n) in place, as the CPU's (model/moe.cpp): the first
// largest as the maximum, the exponentials summed in double.
__device__ __forceinline__ void softmax_in_place(float* v, int n) {
  float max = v[0];
  for (int i = 1; i < n; ++i)
    if (max < v[i]) max = v[i];
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (v[i] = expf(v[i] - max));
  const float inv = float(1.0 / sum);
  for (int i = 0; i < n; ++i) v[i] *= inv;
}

// One thread per token: its probabilities in local memory, then k passes,
// each taking the best expert not yet taken.
__global__ void __launch_bounds__(kRouteThreads)
    moe_route_kernel(const float* logits, int n_tokens, int n_expert, int k, bool softmax_first, bool normalize,
                     float scale, int32_t* experts, float* weights) {
  const int t = int(blockIdx.x) * kRouteThreads + int(threadIdx.x);
  if (t >= n_tokens) return;
  float p[kMaxExperts];
  bool taken[kMaxExperts];
  for (int e = 0; e < n_expert; ++e) p[e] = logits[int64_t(t) * n_expert + e], taken[e] = false;
  if (softmax_first) softmax_in_place(p, n_expert);
  int chosen[kMaxExpertsUsed];
  float w[kMaxExpertsUsed];
  for (int r = 0; r < k; ++r) {
    int best = -1;
    float best_key = 0;
    for (int e = 0; e < n_expert; ++e) {
      const float key = p[e] != p[e] ? -INFINITY : p[e];  // a NaN ranks last
      if (!taken[e] && (best < 0 || key > best_key)) best = e, best_key = key;
    }
    taken[best] = true;
    chosen[r] = best;
    w[r] = p[best];
  }
  if (!softmax_first) softmax_in_place(w, k);
  if (normalize) {
    float sum = 0;
    for (int r = 0; r < k; ++r) sum += w[r];
    sum = fmaxf(sum, 6.103515625e-5f);  // as the CPU: the smallest normal F16, against a zero sum
    for (int r = 0; r < k; ++r) w[r] /= sum;
  }
  for (int r = 0; r < k; ++r) {
    experts[int64_t(t) * k + r] = chosen[r];
    weights[int64_t(t) * k + r] = w[r] * scale;
  }
}

// One block. Two passes over the slots, a chunk at a time through shared
// memory: each thread counts its experts' slots, thread 0 lays the experts'
// runs and tiles out, then each thread writes its experts' slots in order.
__global__ void __launch_bounds__(kGroupThreads)
    moe_group_kernel(const int32_t* experts, int n_slots, int n_expert, int tile_slots, int32_t* order,
                     ExpertTile* tiles, int max_tiles) {
  __shared__ int32_t chunk[kGroupChunk];
  __shared__ int32_t count[kMaxExperts], first[kMaxExperts], tile0[kMaxExperts];
  __shared__ int32_t n_tiles;
  const int tid = int(threadIdx.x);
  for (int e = tid; e < n_expert; e += kGroupThreads) count[e] = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int base = 0; base < n_slots; base += kGroupChunk) {
      const int n = min(kGroupChunk, n_slots - base);
      __syncthreads();  // the last chunk's readers are done (and, first time, the counts are set)
      for (int i = tid; i < n; i += kGroupThreads) chunk[i] = experts[base + i];
      __syncthreads();
      for (int e = tid; e < n_expert; e += kGroupThreads) {
        if (pass == 0) {
          int c = 0;
          for (int i = 0; i < n; ++i) c += chunk[i] == e;
          count[e] += c;
        } else {
          for (int i = 0; i < n; ++i)
            if (chunk[i] == e) order[first[e]++] = base + i;  // first[e] walks the expert's run
        }
      }
    }
    __syncthreads();
    if (pass == 0 && tid == 0) {
      int slot = 0, tile = 0;
      for (int e = 0; e < n_expert; ++e) {
        first[e] = slot, tile0[e] = tile;
        slot += count[e];
        tile += (count[e] + tile_slots - 1) / tile_slots;
      }
      n_tiles = tile;
    }
  }
  __syncthreads();
  // first[e] is now the end of e's run.
  for (int e = tid; e < n_expert; e += kGroupThreads)
    for (int j = 0; j * tile_slots < count[e]; ++j)
      tiles[tile0[e] + j] = {e, first[e] - count[e] + j * tile_slots, min(tile_slots, count[e] - j * tile_slots)};
  for (int i = n_tiles + tid; i < max_tiles; i += kGroupThreads) tiles[i] = {0, 0, 0};
}

// Blocks of kMatvecWarps rows (x) for each tile (y); a warp per row, as matvec.
template <class D>
__global__ void __launch_bounds__(kMatvecWarps * 32)
    matvec_experts_kernel(const uint8_t* w, size_t expert_bytes, size_t row_bytes, int64_t n_rows, int64_t k,
                          const float* x, int x_per_slot, const int32_t* order, const ExpertTile* tiles, float* out) {
  const ExpertTile tile = tiles[blockIdx.y];
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kMatvecWarps + threadIdx.x / 32;
  if (tile.count == 0 || r >= n_rows) return;  // whole warps leave, before any shuffle
  int32_t slot[kMaxMatvecTokens];
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) slot[t] = t < tile.count ? order[tile.first + t] : 0;
  float acc[kMaxMatvecTokens] = {};
  const uint8_t* row = w + size_t(tile.expert) * expert_bytes + size_t(r) * row_bytes;
  lane_dots<D>(
      row, k, lane, tile.count, [&](int t) { return x + int64_t(slot[t] / x_per_slot) * k; }, acc);
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0 && t < tile.count) out[int64_t(slot[t]) * n_rows + r] = s;
  }
}

__global__ void add_expert_bias_kernel(float* y, const float* bias, const int32_t* experts, int n_slots, int n) {
  const int64_t total = int64_t(n_slots) * n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += bias[int64_t(experts[i / n]) * n + i % n];
}

// The CPU's sum: a token's ranks in order, each weight times the (scaled) output.
__global__ void moe_combine_kernel(const float* y, const int32_t* experts, const float* weights,
                                   const float* expert_scale, int n_tokens, int n_used, int n, float* out) {
  const int64_t total = int64_t(n_tokens) * n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / n, j = i % n;
    float o = 0.0f;
    for (int r = 0; r < n_used; ++r) {
      const int64_t s = t * n_used + r;
      float v = y[s * n + j];
      if (expert_scale) v = mul_rn(v, expert_scale[experts[s]]);
      o = add_rn(o, mul_rn(weights[s], v));  // no FMA: the CPU rounds the product, then the sum
    }
    out[i] = o;
  }
}

// One block per token.
__global__ void __launch_bounds__(kMoeThreads) row_dot_kernel(const float* x, const float* w, int n, float* logit) {
  const float* xt = x + int64_t(blockIdx.x) * n;
  double s = 0;
  for (int i = int(threadIdx.x); i < n; i += kMoeThreads) s += double(w[i]) * xt[i];
  // The block's sum in two float halves keeps double's precision through block_sum's float lanes.
  const float hi = float(s);
  const float total_hi = block_sum(hi), total_lo = block_sum(float(s - double(hi)));
  if (threadIdx.x == 0) logit[blockIdx.x] = float(double(total_hi) + double(total_lo));
}

__global__ void add_gated_kernel(float* out, const float* y, const float* logit, int n_tokens, int n) {
  const int64_t total = int64_t(n_tokens) * n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = 1.0f / (1.0f + expf(-logit[i / n]));
    out[i] += g * y[i];
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
