// paged_attention's kernel. One block of kAttentionThreads threads per
// (token, KV head, chunk of up to kMaxGroupHeads of its query heads): the
// query heads that share a KV head (GQA) share each K and V row the block
// reads, so a step reads the cache once per KV head rather than once per
// query head. The positions are taken kAttentionThreads at a time: each
// thread scores one position against every query head of the block (a dot
// product over head_dim per head), then the block folds the tile into an
// online softmax per head (F32 running max and sum; the tile's max and sum
// reduced by 16 threads a head) and each thread accumulates its own output
// dims of every head. A step of few blocks and long tables splits each
// token's positions over several blocks (flash-decoding): each leaves its
// unnormalized output, max and sum in scratch, and attention_combine_kernel
// folds them. Deliberately simple: K rows are read one per thread (not
// coalesced); tensor-core tiles for prefill are the known speedup.
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

constexpr int kAttentionThreads = 128;  // threads per block; a tile of positions
constexpr int kMaxGroupHeads = 8;       // query heads a block takes of one KV head
// The tile's max and sum per head: 16 threads a head, 8 scores each.
constexpr int kReduceLanes = kAttentionThreads / kMaxGroupHeads;
static_assert(kReduceLanes * 8 == kAttentionThreads && kReduceLanes <= 32, "a head's reducers within one warp");

// How a step's attention is launched: the grid (tokens x KV heads x chunks of
// their query heads x splits of the positions), the query heads a block
// takes, the kernel's instance (room for kHeads of them: 1, 2, 4 or 8; each
// thread's output dims kDims: head_dim up to 128 kDims), and the positions a
// split takes.
struct AttentionPlan {
  dim3 grid;
  int heads_per_block = 1;
  int max_heads = 1;  // kHeads
  int dims_per_thread = 1;
  int splits = 1;     // grid.z
  int split_len = 0;  // positions a split takes, a multiple of kAttentionThreads
};

// A step of fewer blocks than kSplitBelowBlocks splits its positions toward
// kSplitTargetBlocks blocks, kMinSplitPositions or more a split.
constexpr int kSplitBelowBlocks = 128, kSplitTargetBlocks = 256, kMinSplitPositions = 512;

// Grouped heads read K and V once for the group, but make fewer blocks: a
// step of few tokens (batch-1 decode) keeps a block per query head so that
// the GPU's SMs fill. a.heads_per_block > 0 forces the choice (tests).
inline AttentionPlan attention_plan(const PagedAttentionArgs& a) {
  const int group = a.n_head / a.n_kv_head;
  int hpb = a.heads_per_block;
  if (hpb <= 0) hpb = int64_t(a.n_tokens) * a.n_kv_head >= 128 ? group : 1;
  hpb = hpb < group ? hpb : group;
  hpb = hpb < kMaxGroupHeads ? hpb : kMaxGroupHeads;
  const int chunks = (group + hpb - 1) / hpb;
  const int dims = a.head_dim <= kAttentionThreads ? 1 : a.head_dim <= 2 * kAttentionThreads ? 2 : 4;
  const int room = hpb <= 1 ? 1 : hpb <= 2 ? 2 : hpb <= 4 ? 4 : 8;
  // The most positions a token attends: its table's, or its window.
  int64_t range = int64_t(a.max_blocks_per_seq) * a.block_size;
  if (a.sliding_window > 0 && a.sliding_window < range) range = a.sliding_window;
  const int64_t blocks = int64_t(a.n_tokens) * a.n_kv_head * chunks, rows = int64_t(a.n_tokens) * a.n_head;
  int64_t splits = a.splits;
  if (splits <= 0) {
    splits = 1;
    if (a.split_scratch && blocks < kSplitBelowBlocks && rows > 0) {
      splits = (kSplitTargetBlocks + blocks - 1) / blocks;
      splits = splits < range / kMinSplitPositions ? splits : range / kMinSplitPositions;
      splits = splits < kMaxAttentionSplitBlocks / rows ? splits : kMaxAttentionSplitBlocks / rows;
      splits = splits > 1 ? splits : 1;
    }
  }
  const int64_t tiles = (range + kAttentionThreads - 1) / kAttentionThreads;
  const int split_len = int((tiles + splits - 1) / splits) * kAttentionThreads;
  return {dim3(unsigned(a.n_tokens), unsigned(a.n_kv_head * chunks), unsigned(splits)),
          hpb,
          room,
          dims,
          int(splits),
          split_len};
}

// The 16 threads of a half warp fold v (max or sum) and each gets the result.
template <bool kMax>
__device__ __forceinline__ float reduce_16(float v) {
  PAGODA_UNROLL
  for (int o = kReduceLanes / 2; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

// heads_per_block <= kHeads, split_len and splits: the plan's (a last chunk
// may hold fewer heads). Split z of a token's positions first .. pos takes
// first + z split_len onwards, split_len of them (none past pos: m -inf, l 0).
// The launch bound's 4 blocks an SM leave 128 registers a thread: without it
// ptxas held some instances to 48-72 and spilled.
template <int kHeads, int kDims>
__global__ void __launch_bounds__(kAttentionThreads, 4)
    paged_attention_kernel(PagedAttentionArgs a, int heads_per_block, int split_len, int splits) {
  static_assert(kDims * kAttentionThreads <= kMaxAttentionHeadDim && kHeads <= kMaxGroupHeads);
  __shared__ float q_s[kHeads][kDims * kAttentionThreads];
  __shared__ float p_s[kHeads][kAttentionThreads];  // the tile's scores, then their exp(score - max)
  __shared__ float tile_s[kMaxGroupHeads];          // a head's tile max, then its sum (one a reducing group)

  const int64_t t = blockIdx.x;
  const int tid = threadIdx.x;
  const int d_head = a.head_dim, group = a.n_head / a.n_kv_head;
  const int chunks = (group + heads_per_block - 1) / heads_per_block;
  const int kv_head = int(blockIdx.y) / chunks;
  const int h0 = kv_head * group + (int(blockIdx.y) % chunks) * heads_per_block;  // the block's first query head
  const int nh = min(heads_per_block, kv_head * group + group - h0);
  const int seq = a.seq_index[t], pos = a.positions[t];
  if (seq < 0 || pos < 0) {
    for (int i = tid; i < nh * d_head && blockIdx.z == 0; i += kAttentionThreads)
      a.out[(t * a.n_head + h0) * d_head + i] = 0.0f;
    return;  // uniform over the block: no barrier is skipped by only some threads
  }

  const int64_t row_stride = a.kv_stride > 0 ? a.kv_stride : int64_t(a.n_kv_head) * d_head;
  const int64_t stride = a.seq_table_stride > 0 ? a.seq_table_stride : a.max_blocks_per_seq;
  const int32_t* table = a.block_tables + seq * stride;
  for (int i = tid; i < nh * d_head; i += kAttentionThreads)
    q_s[i / d_head][i % d_head] = a.q[(t * a.n_head + h0) * d_head + i];

  const int first = a.sliding_window > 0 ? max(0, pos - a.sliding_window + 1) : 0;
  const int begin = first + int(blockIdx.z) * split_len, end = min(pos, begin + split_len - 1);
  float m[kHeads], l[kHeads], acc[kHeads][kDims];
  PAGODA_UNROLL
  for (int h = 0; h < kHeads; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
    PAGODA_UNROLL
    for (int i = 0; i < kDims; ++i) acc[h][i] = 0.0f;
  }
  // The cache row of position j (within token t's sequence) for this KV head.
  auto row = [&](const __half* cache, int j) {
    const int64_t block = table[j / a.block_size];
    return cache + (block * a.block_size + j % a.block_size) * row_stride + int64_t(kv_head) * d_head;
  };
  const int red_head = tid / kReduceLanes, red_first = (tid % kReduceLanes) * 8;  // this thread's share of a fold

  for (int j0 = begin; j0 <= end; j0 += kAttentionThreads) {
    __syncthreads();  // q_s is written (first tile), and the last tile's p_s is read by all
    const int j = j0 + tid;
    float s[kHeads];
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h) s[h] = 0.0f;
    if (j <= end) {
      const __half* k = row(a.k_cache, j);
      for (int d = 0; d < d_head; ++d) {
        const float kd = __half2float(k[d]);
        PAGODA_UNROLL
        for (int h = 0; h < kHeads; ++h)
          if (h < nh) s[h] += q_s[h][d] * kd;
      }
    }
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h) {
      const float dot = s[h];
      p_s[h][tid] = j > end || h >= nh ? -INFINITY
                    : a.softcap > 0    ? a.softcap * tanhf(dot * a.scale / a.softcap)
                                       : a.scale * dot;
    }
    __syncthreads();
    const int n = min(kAttentionThreads, end - j0 + 1);
    // The tile's max per head (each holds at least one position: finite for a real head).
    float part = -INFINITY;
    for (int i = 0; i < 8 && red_head < nh; ++i) part = fmaxf(part, p_s[red_head][red_first + i]);
    part = reduce_16<true>(part);
    if (tid % kReduceLanes == 0) tile_s[red_head] = part;
    __syncthreads();
    float correction[kHeads];
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h) {
      const float m_new = fmaxf(m[h], tile_s[h]);
      correction[h] = h < nh ? expf(m[h] - m_new) : 0.0f;  // 0 on the first tile (m = -inf)
      m[h] = m_new;
    }
    __syncthreads();  // tile_s is read by all before the sums overwrite it
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h)
      if (h < nh) p_s[h][tid] = tid < n ? expf(p_s[h][tid] - m[h]) : 0.0f;
    __syncthreads();
    part = 0.0f;
    for (int i = 0; i < 8 && red_head < nh; ++i) part += p_s[red_head][red_first + i];
    part = reduce_16<false>(part);
    if (tid % kReduceLanes == 0) tile_s[red_head] = part;
    __syncthreads();
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h) {
      l[h] = l[h] * correction[h] + (h < nh ? tile_s[h] : 0.0f);
      PAGODA_UNROLL
      for (int i = 0; i < kDims; ++i) acc[h][i] *= correction[h];
    }
    for (int jj = 0; jj < n; ++jj) {
      const __half* v = row(a.v_cache, j0 + jj);
      float p[kHeads];
      PAGODA_UNROLL
      for (int h = 0; h < kHeads; ++h) p[h] = h < nh ? p_s[h][jj] : 0.0f;
      PAGODA_UNROLL
      for (int i = 0; i < kDims; ++i) {
        const int d = tid + i * kAttentionThreads;
        if (d < d_head) {
          const float vd = __half2float(v[d]);
          PAGODA_UNROLL
          for (int h = 0; h < kHeads; ++h) acc[h][i] += p[h] * vd;
        }
      }
    }
  }
  if (splits > 1) {  // this split's share, for attention_combine_kernel: max, sum, unnormalized output
    PAGODA_UNROLL
    for (int h = 0; h < kHeads; ++h) {
      if (h >= nh) continue;
      float* r = a.split_scratch + ((t * a.n_head + h0 + h) * splits + blockIdx.z) * (d_head + 2);
      if (tid == 0) r[0] = m[h], r[1] = l[h];
      PAGODA_UNROLL
      for (int i = 0; i < kDims; ++i)
        if (tid + i * kAttentionThreads < d_head) r[2 + tid + i * kAttentionThreads] = acc[h][i];
    }
    return;
  }
  PAGODA_UNROLL
  for (int h = 0; h < kHeads; ++h) {
    if (h >= nh) continue;
    if (a.sinks) {  // one more term in the sum, for no position: the outputs shrink by its share
      const float sink = a.sinks[h0 + h], m_new = fmaxf(m[h], sink), correction = expf(m[h] - m_new);
      l[h] = l[h] * correction + expf(sink - m_new);
      PAGODA_UNROLL
      for (int i = 0; i < kDims; ++i) acc[h][i] *= correction;
    }
    const float inv = 1.0f / l[h];  // l >= 1: the largest score (or sink) contributes exp(0)
    float* out = a.out + (t * a.n_head + h0 + h) * d_head;
    PAGODA_UNROLL
    for (int i = 0; i < kDims; ++i) {
      const int d = tid + i * kAttentionThreads;
      if (d < d_head) out[d] = acc[h][i] * inv;
    }
  }
}

// One block per (token, query head) of a split step: its splits' shares
// folded into the softmax over all of them (and the sink), as the unsplit
// kernel's online softmax would have. Padding tokens were written already.
__global__ void __launch_bounds__(kAttentionThreads) attention_combine_kernel(PagedAttentionArgs a, int splits) {
  const int64_t t = blockIdx.x;
  const int h = blockIdx.y, d_head = a.head_dim;
  if (a.seq_index[t] < 0 || a.positions[t] < 0) return;
  const float* rows = a.split_scratch + (t * a.n_head + h) * splits * int64_t(d_head + 2);
  float m = a.sinks ? a.sinks[h] : -INFINITY;
  for (int z = 0; z < splits; ++z) m = fmaxf(m, rows[z * (d_head + 2)]);  // finite: split 0 holds a position
  float l = a.sinks ? expf(a.sinks[h] - m) : 0.0f;
  for (int z = 0; z < splits; ++z) {
    const float mz = rows[z * (d_head + 2)];
    if (mz != -INFINITY) l += rows[z * (d_head + 2) + 1] * expf(mz - m);
  }
  const float inv = 1.0f / l;
  for (int d = threadIdx.x; d < d_head; d += kAttentionThreads) {
    float o = 0.0f;
    for (int z = 0; z < splits; ++z) {
      const float mz = rows[z * (d_head + 2)];
      if (mz != -INFINITY) o += rows[z * (d_head + 2) + 2 + d] * expf(mz - m);
    }
    a.out[(t * a.n_head + h) * d_head + d] = o * inv;
  }
}

// Calls f(the kernel instance plan p names).
template <int kHeads, class F>
void with_attention_dims(const AttentionPlan& p, F&& f) {
  if (p.dims_per_thread == 1)
    f(paged_attention_kernel<kHeads, 1>);
  else if (p.dims_per_thread == 2)
    f(paged_attention_kernel<kHeads, 2>);
  else
    f(paged_attention_kernel<kHeads, 4>);
}
template <class F>
void with_attention_kernel(const AttentionPlan& p, F&& f) {
  switch (p.max_heads) {
    case 1: return with_attention_dims<1>(p, f);
    case 2: return with_attention_dims<2>(p, f);
    case 4: return with_attention_dims<4>(p, f);
    default: return with_attention_dims<8>(p, f);
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
