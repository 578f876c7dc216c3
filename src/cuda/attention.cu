// paged_attention's launcher; the kernel is in attention_kernel.cuh.
#include "cuda/attention.h"
#include "cuda/attention_kernel.cuh"

namespace pagoda::cuda {

cudaError_t paged_attention(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (a.n_tokens < 0 || a.n_head <= 0 || a.n_kv_head <= 0 || a.n_head % a.n_kv_head != 0 || a.head_dim <= 0 ||
      a.head_dim > kMaxAttentionHeadDim || a.block_size <= 0 || a.max_blocks_per_seq <= 0 || a.seq_table_stride < 0 ||
      a.n_head > 65535 || (a.kv_stride != 0 && a.kv_stride < a.n_kv_head * a.head_dim) || a.heads_per_block < 0 ||
      a.splits < 0)
    return cudaErrorInvalidValue;
  if (a.n_tokens == 0) return cudaSuccess;
  const detail::AttentionPlan p = detail::attention_plan(a);
  if (p.splits > 1 && (!a.split_scratch || int64_t(a.n_tokens) * a.n_head * p.splits > kMaxAttentionSplitBlocks))
    return cudaErrorInvalidValue;
  detail::with_attention_kernel(p, [&](auto kernel) {
    kernel<<<p.grid, detail::kAttentionThreads, 0, stream>>>(a, p.heads_per_block, p.split_len, p.splits);
  });
  if (p.splits > 1)
    detail::attention_combine_kernel<<<dim3(unsigned(a.n_tokens), unsigned(a.n_head)), detail::kAttentionThreads, 0,
                                       stream>>>(a, p.splits);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
