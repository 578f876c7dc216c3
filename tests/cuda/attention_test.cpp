// paged_attention on the GPU against a double loop over the same F16 cache: a
// mixed batch (a chunked prefill of a long sequence, a fresh prefill, padding),
// GQA, head dims that are and are not powers of two, and sliding windows.
#include <vector>

#include "attention_case.h"
#include "cuda/attention.h"
#include "cuda_test_util.h"

namespace pagoda::cuda {
namespace {

using testing::AttentionBatch;
using testing::AttentionShape;
using testing::DeviceBuffer;

// Each case in testing::head_layouts.
void check_on_device(const AttentionBatch& batch, AttentionShape s, uint32_t seed, int grouped = 0) {
  for (const int heads : testing::head_layouts(s, grouped)) {
    s.heads_per_block = heads;
    SCOPED_TRACE(testing::describe(batch, s));
    const testing::AttentionCase c = testing::make_attention_case(batch, s, seed);
    DeviceBuffer<float> q_d(c.q), out_d(testing::nan_floats(c.q.size()));
    DeviceBuffer<uint16_t> k_d(c.k_cache), v_d(c.v_cache);
    DeviceBuffer<int32_t> seq_d(c.batch.seq), pos_d(c.batch.pos), tables_d(c.upload_tables);
    DeviceBuffer<float> sinks_d(c.sinks), scratch_d(testing::nan_floats(kAttentionSplitScratchFloats));
    const PagedAttentionArgs a = c.args(q_d.get(), k_d.get(), v_d.get(), seq_d.get(), pos_d.get(), tables_d.get(),
                                        out_d.get(), sinks_d.get(), scratch_d.get());
    ASSERT_EQ(paged_attention(a, nullptr), cudaSuccess);
    PAGODA_CUDA_SYNC();
    testing::expect_attention_matches(c, out_d.download());
  }
}

TEST(CudaAttention, MixedBatchWithGqaMatchesADoubleLoop) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_on_device(testing::mixed_batch(), {8, 2, 64, 0}, 81);
  check_on_device(testing::mixed_batch(), {8, 2, 64, 0, true}, 91);                 // StepUpload's grouped tables
  check_on_device(testing::mixed_batch(), {8, 2, 32, 16, true, false, 0, 64}, 98);  // rows in a wider page slot
  check_on_device(testing::mixed_batch(), {6, 3, 96, 0}, 82);                       // head_dim not a power of two
  check_on_device(testing::mixed_batch(), {4, 1, 256, 0}, 83);                      // all query heads on one KV head
  check_on_device(testing::mixed_batch(), {4, 2, 512, 0}, 97);     // the largest head_dim: gemma4's global layers
  check_on_device(testing::mixed_batch(), {5, 5, 80, 0}, 84);      // no GQA
  check_on_device(testing::mixed_batch(), {12, 2, 64, 0}, 99, 4);  // 6 a KV head: chunks of 4 and 2
  check_on_device(testing::mixed_batch(), {32, 2, 128, 0}, 100);   // 16 a KV head: two blocks of 8
}

// Positions split over blocks and combined (flash-decoding), as on the host.
TEST(CudaAttention, SplitPositionsCombineToTheWholeSoftmax) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  const auto split = [](AttentionShape s, int splits) {
    s.splits = splits;
    return s;
  };
  check_on_device(testing::mixed_batch(), split({8, 2, 64, 0}, 3), 101);
  check_on_device(testing::mixed_batch(), split({8, 2, 64, 0, false, true}, 2), 102);
  check_on_device(testing::mixed_batch(), split({8, 4, 128, 200, true}, 2), 103);
  check_on_device(testing::mixed_batch(), split({4, 2, 256, 0, false, false, 1.5f}, 5), 104);
}

TEST(CudaAttention, DecodeOfOneToken) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_on_device(testing::decode_one(), {8, 2, 64, 0}, 85);
  check_on_device(testing::decode_one(), {8, 8, 128, 0}, 86);
}

// Windows shorter than a block, across a block boundary, and longer than a tile.
TEST(CudaAttention, SlidingWindowDropsOldPositions) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_on_device(testing::mixed_batch(), {8, 2, 64, 5}, 87);
  check_on_device(testing::mixed_batch(), {8, 2, 64, 20}, 88);
  check_on_device(testing::mixed_batch(), {8, 4, 128, 200}, 89);
  check_on_device(testing::mixed_batch(), {8, 2, 64, 40, true}, 92);
  check_on_device(testing::mixed_batch(), {8, 2, 64, 128, false, true}, 94);  // gpt-oss: sinks and its window
  check_on_device(testing::mixed_batch(), {8, 2, 64, 20, false, false, 1.5f},
                  95);  // gemma2's cap, one the scores reach
  check_on_device(testing::decode_one(), {8, 2, 64, 3}, 90);
}

TEST(CudaAttention, RefusesBadShapes) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  PagedAttentionArgs a;
  a.n_tokens = 1, a.n_head = 6, a.n_kv_head = 4, a.head_dim = 64, a.block_size = 16, a.max_blocks_per_seq = 1;
  EXPECT_EQ(paged_attention(a, nullptr), cudaErrorInvalidValue);  // 6 query heads do not share 4 KV heads evenly
  a.n_kv_head = 2, a.head_dim = kMaxAttentionHeadDim + 1;
  EXPECT_EQ(paged_attention(a, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace pagoda::cuda
