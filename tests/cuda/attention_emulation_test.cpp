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

// The kernel as the launcher runs it (attention.cu), for plan p.
void launch_on_host(const PagedAttentionArgs& a) {
  const detail::AttentionPlan p = detail::attention_plan(a);
  detail::with_attention_kernel(p, [&](auto kernel) {
    emulation::launch(p.grid, dim3(detail::kAttentionThreads), kernel, a, p.heads_per_block);
  });
}

// Each case with a block per query head and with a KV head's query heads in blocks of up to
// `grouped` (0: all of them, up to kMaxGroupHeads).
void check_on_host(const AttentionBatch& batch, AttentionShape s, uint32_t seed, int grouped = 0) {
  for (const int heads : {1, grouped > 0 ? grouped : s.n_head / s.n_kv_head}) {
    s.heads_per_block = heads;
    SCOPED_TRACE(fmt::format("heads {}/{} ({} a block) head_dim {} window {} tokens {}{}{}{}", s.n_head, s.n_kv_head,
                             heads, s.head_dim, s.window, batch.seq.size(), s.grouped_tables ? " grouped tables" : "",
                             s.sinks ? " sinks" : "", s.row_pad ? " wider rows" : ""));
    const testing::AttentionCase c = testing::make_attention_case(batch, s, seed);
    std::vector<float> out = testing::nan_floats(c.q.size());
    launch_on_host(c.args(c.q.data(), c.k_cache.data(), c.v_cache.data(), c.batch.seq.data(), c.batch.pos.data(),
                          c.upload_tables.data(), out.data(), c.sinks.data()));
    testing::expect_attention_matches(c, out);
  }
}

// Fewer and smaller cases than on the GPU: each block is 128 CPU threads.
TEST(CudaAttentionOnHost, KernelSourceMatchesADoubleLoop) {
  check_on_host(testing::mixed_batch(), {4, 2, 64, 0}, 81);
  check_on_host(testing::mixed_batch(), {2, 1, 256, 0, true}, 91);
  check_on_host(testing::mixed_batch(), {4, 2, 32, 16, true, false, 0, 64},
                98);                                         // gemma4's sliding rows in a wider slot
  check_on_host(testing::decode_one(), {2, 1, 512, 0}, 96);  // gemma4's global heads
  check_on_host(testing::mixed_batch(), {3, 3, 96, 20}, 88);
  check_on_host(testing::decode_one(), {4, 2, 64, 3}, 90);
  check_on_host(testing::mixed_batch(), {4, 2, 64, 20, false, true}, 93);        // gpt-oss: sinks and a window
  check_on_host(testing::mixed_batch(), {4, 2, 64, 0, false, false, 1.5f}, 95);  // a cap the scores reach
  check_on_host(testing::decode_one(), {12, 2, 64, 0}, 99, 4);                   // 6 a KV head: chunks of 4 and 2
  check_on_host(testing::decode_one(), {16, 1, 128, 0}, 100);                    // 16 a KV head: two blocks of 8
}

// A CUDA graph's padding token (gpu/graph_buckets.h): position 0 of a
// sequence of its own whose table is block 0 then kNoBlock. It reads block
// 0's first row only (softmax over one position: exactly that V row) and
// leaves the real token beside it as it would be alone.
TEST(CudaAttentionOnHost, AGraphPaddingTokenReadsBlockZerosFirstRowOnly) {
  std::mt19937 rng(7);
  constexpr int kBlock = 16, kHeads = 2, kDim = 64;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<__half> k(size_t(2) * kBlock * kDim), v(k.size());
  std::vector<float> kf(k.size()), vf(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = __float2half(u(rng)), v[i] = __float2half(u(rng));
    kf[i] = __half2float(k[i]), vf[i] = __half2float(v[i]);
  }
  std::vector<float> q(size_t(2) * kHeads * kDim), out(q.size(), NAN);
  for (float& x : q) x = u(rng);
  const std::vector<int32_t> seq = {0, 1}, pos = {5, 0}, tables = {1, -1, 0, -1};  // [2 seqs][2 blocks]
  const PagedAttentionArgs a{.q = q.data(),
                             .k_cache = k.data(),
                             .v_cache = v.data(),
                             .seq_index = seq.data(),
                             .positions = pos.data(),
                             .block_tables = tables.data(),
                             .out = out.data(),
                             .n_tokens = 2,
                             .n_head = kHeads,
                             .n_kv_head = 1,
                             .head_dim = kDim,
                             .block_size = kBlock,
                             .max_blocks_per_seq = 2,
                             .scale = 0.125f};
  launch_on_host(a);
  for (int h = 0; h < kHeads; ++h) {
    // The real token: positions 0..5 of block 1.
    std::vector<double> w(6);
    double top = -INFINITY, sum = 0;
    for (int j = 0; j < 6; ++j) {
      double s = 0;
      for (int d = 0; d < kDim; ++d) s += double(q[size_t(h * kDim + d)]) * kf[size_t((kBlock + j) * kDim + d)];
      top = std::max(top, w[size_t(j)] = s * 0.125);
    }
    for (double& x : w) sum += (x = std::exp(x - top));
    for (int d = 0; d < kDim; ++d) {
      double o = 0;
      for (int j = 0; j < 6; ++j) o += w[size_t(j)] / sum * vf[size_t((kBlock + j) * kDim + d)];
      EXPECT_NEAR(out[size_t(h * kDim + d)], o, 1e-5) << "head " << h << " dim " << d;
      EXPECT_FLOAT_EQ(out[size_t((kHeads + h) * kDim + d)], vf[size_t(d)]) << "padding, head " << h;
    }
  }
}

}  // namespace
}  // namespace pagoda::cuda
