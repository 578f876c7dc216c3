// paged_attention's kernel. One block of kAttentionThreads threads per (token,
// query head). The positions are taken kAttentionThreads at a time: each
// thread scores one position (a dot product over head_dim), then the block
// folds the tile into an online softmax (F32 running max and sum) and each
// thread accumulates its own output dims. Deliberately simple: K rows are read
// one per thread (not coalesced), and every thread rescans the tile's scores
// in shared memory. A flash-decoding split over positions and tensor-core
// tiles for prefill are the known speedups.
//
// The kernel stands apart from its launcher (attention.cu) so that a test can
// also compile it for the CPU and run it there (tests/cuda/host_emulation.h).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/attention.h"
#include "cuda/portable.cuh"

namespace pagoda::cuda::detail {
// File-local: a test's CPU build of the kernel must not clash with the library's.
namespace {

constexpr int kAttentionThreads = 128;  // threads per block: one (token, query head)
constexpr int kDimsPerThread = kMaxAttentionHeadDim / kAttentionThreads;

__global__ void __launch_bounds__(kAttentionThreads) paged_attention_kernel(PagedAttentionArgs a) {
  __shared__ float q_s[kMaxAttentionHeadDim];
  __shared__ float p_s[kAttentionThreads];  // the tile's scores, then their exp(score - max)

  const int64_t t = blockIdx.x;
  const int h = blockIdx.y;
  const int tid = threadIdx.x;
  const int d_head = a.head_dim;
  float* out = a.out + (t * a.n_head + h) * d_head;
  const int seq = a.seq_index[t], pos = a.positions[t];
  if (seq < 0 || pos < 0) {
    for (int d = tid; d < d_head; d += kAttentionThreads) out[d] = 0.0f;
    return;  // uniform over the block: no barrier is skipped by only some threads
  }

  const int64_t row_stride = a.kv_stride > 0 ? a.kv_stride : int64_t(a.n_kv_head) * d_head;
  const int kv_head = h / (a.n_head / a.n_kv_head);
  const int64_t stride = a.seq_table_stride > 0 ? a.seq_table_stride : a.max_blocks_per_seq;
  const int32_t* table = a.block_tables + seq * stride;
  const float* q = a.q + (t * a.n_head + h) * d_head;
  for (int d = tid; d < d_head; d += kAttentionThreads) q_s[d] = q[d];

  const int first = a.sliding_window > 0 ? max(0, pos - a.sliding_window + 1) : 0;
  float m = -INFINITY, l = 0.0f;
  float acc[kDimsPerThread];
  PAGODA_UNROLL
  for (int i = 0; i < kDimsPerThread; ++i) acc[i] = 0.0f;
  // The cache row of position j (within token t's sequence) for this KV head.
  auto row = [&](const __half* cache, int j) {
    const int64_t block = table[j / a.block_size];
    return cache + (block * a.block_size + j % a.block_size) * row_stride + int64_t(kv_head) * d_head;
  };

  for (int j0 = first; j0 <= pos; j0 += kAttentionThreads) {
    __syncthreads();  // q_s is written (first tile), and the last tile's p_s is read by all
    const int j = j0 + tid;
    float s = -INFINITY;
    if (j <= pos) {
      const __half* k = row(a.k_cache, j);
      float dot = 0.0f;
      for (int d = 0; d < d_head; ++d) dot += q_s[d] * __half2float(k[d]);
      s = a.softcap > 0 ? a.softcap * tanhf(dot * a.scale / a.softcap) : a.scale * dot;
    }
    p_s[tid] = s;
    __syncthreads();
    const int n = min(kAttentionThreads, pos - j0 + 1);
    float tile_max = -INFINITY;
    for (int i = 0; i < n; ++i) tile_max = fmaxf(tile_max, p_s[i]);
    const float m_new = fmaxf(m, tile_max);    // finite: the tile holds at least one position
    const float correction = expf(m - m_new);  // 0 on the first tile (m = -inf)
    __syncthreads();
    if (tid < n) p_s[tid] = expf(p_s[tid] - m_new);
    __syncthreads();
    float tile_sum = 0.0f;
    for (int i = 0; i < n; ++i) tile_sum += p_s[i];
    l = l * correction + tile_sum;
    PAGODA_UNROLL
    for (int i = 0; i < kDimsPerThread; ++i) {
      const int d = tid + i * kAttentionThreads;
      if (d < d_head) {
        float sum = 0.0f;
        for (int jj = 0; jj < n; ++jj) sum += p_s[jj] * __half2float(row(a.v_cache, j0 + jj)[d]);
        acc[i] = acc[i] * correction + sum;
      }
    }
    m = m_new;
  }
  if (a.sinks) {  // one more term in the sum, for no position: the outputs shrink by its share
    const float sink = a.sinks[h], m_new = fmaxf(m, sink), correction = expf(m - m_new);
    l = l * correction + expf(sink - m_new);
    PAGODA_UNROLL
    for (int i = 0; i < kDimsPerThread; ++i) acc[i] *= correction;
  }
  const float inv = 1.0f / l;  // l >= 1: the largest score (or sink) contributes exp(0)
  PAGODA_UNROLL
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int d = tid + i * kAttentionThreads;
    if (d < d_head) out[d] = acc[i] * inv;
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
