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

// The kernels as the launcher runs them (attention.cu).
void launch_on_host(const PagedAttentionArgs& a) {
  const detail::AttentionPlan p = detail::attention_plan(a);
  ASSERT_TRUE(p.splits == 1 || a.split_scratch) << "a split needs scratch";
  detail::with_attention_kernel(p, [&](auto kernel) {
    emulation::launch(p.grid, dim3(detail::kAttentionThreads), kernel, a, p.heads_per_block, p.split_len, p.splits);
  });
  if (p.splits > 1)
    emulation::launch(dim3(unsigned(a.n_tokens), unsigned(a.n_head)), dim3(detail::kAttentionThreads),
                      detail::attention_combine_kernel, a, p.splits);
}

// Each case in testing::head_layouts.
void check_on_host(const AttentionBatch& batch, AttentionShape s, uint32_t seed, int grouped = 0) {
  for (const int heads : testing::head_layouts(s, grouped)) {
    s.heads_per_block = heads;
    SCOPED_TRACE(testing::describe(batch, s));
    const testing::AttentionCase c = testing::make_attention_case(batch, s, seed);
    std::vector<float> out = testing::nan_floats(c.q.size()),
                       scratch = testing::nan_floats(kAttentionSplitScratchFloats);
    launch_on_host(c.args(c.q.data(), c.k_cache.data(), c.v_cache.data(), c.batch.seq.data(), c.batch.pos.data(),
                          c.upload_tables.data(), out.data(), c.sinks.data(), scratch.data()));
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

// Positions split over blocks and combined (flash-decoding): 300 positions in 3 splits of 128
// (the prefill's later splits empty), with sinks, a window, a cap, grouped heads; and when the
// launcher splits.
TEST(CudaAttentionOnHost, SplitPositionsCombineToTheWholeSoftmax) {
  // Each case in one layout of heads: the kernel's split is the same code either way.
  const auto split = [](AttentionShape s, int splits, int heads) {
    s.splits = splits;
    s.heads_per_block = heads;
    return s;
  };
  check_on_host(testing::mixed_batch(), split({4, 2, 64, 0}, 3, 2), 101);
  check_on_host(testing::mixed_batch(), split({4, 2, 64, 0, false, true}, 2, 1), 102);          // sinks
  check_on_host(testing::mixed_batch(), split({4, 1, 64, 200, true}, 2, 4), 103);               // a window
  check_on_host(testing::mixed_batch(), split({2, 1, 256, 0, false, false, 1.5f}, 5, 2), 104);  // a cap, 5 splits
  PagedAttentionArgs a{.n_tokens = 8, .n_head = 4, .n_kv_head = 2, .head_dim = 64, .block_size = 16};
  a.max_blocks_per_seq = 256;  // up to 4096 positions a token: 8 tokens x 4 heads split in 8
  float scratch = 0;
  a.split_scratch = &scratch;
  EXPECT_EQ(detail::attention_plan(a).splits, 8);
  EXPECT_EQ(detail::attention_plan(a).split_len, 512);
  a.sliding_window = 1100;  // a window bounds the range: 1100 positions in 2 splits
  EXPECT_EQ(detail::attention_plan(a).splits, 2);
  a.sliding_window = 0;
  a.n_tokens = 64;  // 128 blocks already: no split
  EXPECT_EQ(detail::attention_plan(a).splits, 1);
  a.n_tokens = 8;
  a.split_scratch = nullptr;  // no scratch, no split
  EXPECT_EQ(detail::attention_plan(a).splits, 1);
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
