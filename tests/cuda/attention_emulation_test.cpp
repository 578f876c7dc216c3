// paged_attention's kernel source compiled for the CPU and run there
// (host_emulation.h: a block's threads as std::threads, __syncthreads() a
// barrier), against the same double loop as the GPU test. Needs no GPU: the
// kernel's indexing, tiling and online softmax are checked on every machine;
// what only the device shows (its float rounding, memory faults, races the
// barrier order hides) stays with the GPU test and compute-sanitizer.
#include "host_emulation.h"
// The emulation's definitions first: the kernel's source uses them.
#include "attention_case.h"
#include "cuda/attention_kernel.cuh"

namespace pagoda::cuda {
namespace {

using testing::AttentionBatch;
using testing::AttentionShape;

void check_on_host(const AttentionBatch& batch, const AttentionShape& s, uint32_t seed) {
  SCOPED_TRACE(fmt::format("heads {}/{} head_dim {} window {} tokens {}{}", s.n_head, s.n_kv_head, s.head_dim, s.window,
                           batch.seq.size(), s.grouped_tables ? " grouped tables" : ""));
  const testing::AttentionCase c = testing::make_attention_case(batch, s, seed);
  std::vector<float> out = testing::nan_floats(c.q.size());
  const PagedAttentionArgs a = c.args(c.q.data(), c.k_cache.data(), c.v_cache.data(), c.batch.seq.data(),
                                      c.batch.pos.data(), c.upload_tables.data(), out.data());
  emulation::launch(dim3(unsigned(a.n_tokens), unsigned(a.n_head)), dim3(detail::kAttentionThreads),
                    detail::paged_attention_kernel, a);
  testing::expect_attention_matches(c, out);
}

// Fewer and smaller cases than on the GPU: each block is 128 CPU threads.
TEST(CudaAttentionOnHost, KernelSourceMatchesADoubleLoop) {
  check_on_host(testing::mixed_batch(), {4, 2, 64, 0}, 81);
  check_on_host(testing::mixed_batch(), {2, 1, 256, 0, true}, 91);
  check_on_host(testing::mixed_batch(), {3, 3, 96, 20}, 88);
  check_on_host(testing::decode_one(), {4, 2, 64, 3}, 90);
}

}  // namespace
}  // namespace pagoda::cuda
