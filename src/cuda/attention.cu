// paged_attention's launcher; the kernel is in attention_kernel.cuh.
#include "cuda/attention.h"
#include "cuda/attention_kernel.cuh"

namespace pagoda::cuda {

cudaError_t paged_attention(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (a.n_tokens < 0 || a.n_head <= 0 || a.n_kv_head <= 0 || a.n_head % a.n_kv_head != 0 || a.head_dim <= 0 ||
      a.head_dim > kMaxAttentionHeadDim || a.block_size <= 0 || a.max_blocks_per_seq <= 0 || a.seq_table_stride < 0 ||
      a.n_head > 65535 || (a.kv_stride != 0 && a.kv_stride < a.n_kv_head * a.head_dim) || a.heads_per_block < 0)
    return cudaErrorInvalidValue;
  if (a.n_tokens == 0) return cudaSuccess;
  const detail::AttentionPlan p = detail::attention_plan(a);
  detail::with_attention_kernel(
      p, [&](auto kernel) { kernel<<<p.grid, detail::kAttentionThreads, 0, stream>>>(a, p.heads_per_block); });
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
