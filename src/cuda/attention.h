// Attention over the paged K/V cache, one kernel for prefill, decode and
// mixed batches: every token of the step attends its own sequence's cached
// positions 0..pos (store_kv, kv.h, has written this step's K and V first).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda {

inline constexpr int kMaxAttentionHeadDim = 512;  // gemma4's global layers
// paged_attention's scratch for a long context split over blocks
// (flash-decoding): each block's unnormalized output, max and sum.
inline constexpr int kMaxAttentionSplitBlocks = 1024;
inline constexpr int64_t kAttentionSplitScratchFloats = int64_t(kMaxAttentionSplitBlocks) * (kMaxAttentionHeadDim + 2);

struct PagedAttentionArgs {
  const float* q = nullptr;            // [n_tokens][n_head][head_dim] F32 (RoPE applied)
  const __half* k_cache = nullptr;     // [num_blocks][block_size][kv_stride] F16, one layer's part of the pool
  const __half* v_cache = nullptr;     // as k_cache
  const int32_t* seq_index = nullptr;  // [n_tokens]: the token's row of block_tables
  const int32_t* positions = nullptr;  // [n_tokens]: the token's position in its sequence
  // [n_seqs][max_blocks_per_seq], rows seq_table_stride apart: the cache block of each
  // block_size positions. Only blocks of attended positions are read, so entries past the
  // last position or before a window may be anything (StepUpload's kNoBlock).
  const int32_t* block_tables = nullptr;
  float* out = nullptr;  // [n_tokens][n_head][head_dim] F32
  int n_tokens = 0;
  int n_head = 0;
  int n_kv_head = 0;  // divides n_head (GQA: query head h reads KV head h / (n_head / n_kv_head))
  int head_dim = 0;   // 1..kMaxAttentionHeadDim
  int block_size = 0;
  int max_blocks_per_seq = 0;
  // Elements from one sequence's table to the next; 0 means max_blocks_per_seq. StepUpload's
  // tables[S][G][B] for group g: block_tables = tables + g * B, seq_table_stride = G * B.
  int64_t seq_table_stride = 0;
  // Elements from one cached position's row to the next; 0 means n_kv_head * head_dim. Wider
  // where the layer's KV page slot is (model/kv_storage.h: gemma4's layers of two head sizes).
  int kv_stride = 0;
  float scale = 0.0f;      // the score is scale * dot(q, k), usually 1 / sqrt(head_dim)
  float softcap = 0.0f;    // > 0: the score is softcap * tanh(scale * dot / softcap) (gemma2)
  int sliding_window = 0;  // > 0: only positions > pos - sliding_window are attended
  // [n_head] F32: a logit per query head that joins the softmax's denominator
  // only (gpt-oss's attention sinks; not scaled); null: none.
  const float* sinks = nullptr;
  // Query heads of one KV head a block takes (they share its K/V reads); 0:
  // the launcher's choice by the step's size. Tests force each path.
  int heads_per_block = 0;
  // kAttentionSplitScratchFloats floats: a step with few blocks and long
  // tables splits each token's positions over several blocks and a second
  // launch combines them (flash-decoding); null: no split. The split follows
  // from the step's shape alone (tokens, heads, max_blocks_per_seq), never
  // from its positions, so a CUDA graph captured for a shape holds for every
  // step of it.
  float* split_scratch = nullptr;
  int splits = 0;  // > 0 forces that many (tests); 0: the launcher's choice
};

// out[t][h] = sum_j softmax_j(scale * q[t][h] . K[j]) V[j] over the attended
// positions j of token t's sequence (causal: j <= pos[t]; with a window, also
// j > pos[t] - window), the sink's exp(sink[h] - max) added to the softmax's
// sum. A token with a negative seq_index or position (padding) gets zeros.
// cudaErrorInvalidValue for a bad shape, or a forced split without scratch.
cudaError_t paged_attention(const PagedAttentionArgs& a, cudaStream_t stream);

}  // namespace pagoda::cuda
