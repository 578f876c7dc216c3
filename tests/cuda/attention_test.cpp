// paged_attention against a double loop over the same F16 cache: a mixed batch
// (a chunked prefill of a long sequence, a fresh prefill, padding), GQA, head
// dims that are and are not powers of two, and a sliding window.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/attention.h"
#include "cuda_test_util.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

struct Batch {
  std::vector<int32_t> seq, pos;  // per token; seq -1: padding
};

// Sequence 0 is 300 positions long (19 blocks of 16, past two tiles of 128
// positions) and runs its last three; sequence 1 prefills 7; then one padding token.
Batch mixed_batch() {
  Batch b;
  for (int p : {297, 298, 299}) b.seq.push_back(0), b.pos.push_back(p);
  for (int p = 0; p < 7; ++p) b.seq.push_back(1), b.pos.push_back(p);
  b.seq.push_back(-1), b.pos.push_back(-1);
  return b;
}

// A decode step: one token at the end of sequence 1.
Batch decode_one() { return Batch{{1}, {40}}; }

struct Shape {
  int n_head, n_kv_head, head_dim, window;
  // The tables as StepUpload packs them, [n_seqs][2 groups][max_blocks], the kernel given group 1's.
  bool grouped_tables = false;
};

void check_attention(const Batch& batch, const Shape& s, uint32_t seed) {
  SCOPED_TRACE(fmt::format("heads {}/{} head_dim {} window {} tokens {}", s.n_head, s.n_kv_head, s.head_dim, s.window,
                           batch.seq.size()));
  std::mt19937 rng(seed);
  const int block_size = 16, n_seqs = 2, max_blocks = 20, num_blocks = 2 * max_blocks + 3;
  const int n_tokens = int(batch.seq.size()), kv_dim = s.n_kv_head * s.head_dim;
  // Each sequence's blocks are scattered over the cache in random order. Table entries past
  // the last position, and of blocks wholly before every window of the sequence (a sliding
  // group gives them back), are -1: reading one would be out of bounds (memcheck).
  std::vector<int32_t> blocks(num_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<int32_t> table(size_t(n_seqs) * max_blocks, -1);
  for (int seq = 0; seq < n_seqs; ++seq) {
    int last = -1, first = INT32_MAX;
    for (size_t t = 0; t < batch.seq.size(); ++t)
      if (batch.seq[t] == seq) {
        last = std::max(last, batch.pos[t]);
        first = std::min(first, s.window > 0 ? std::max(0, batch.pos[t] - s.window + 1) : 0);
      }
    for (int b = first / block_size; b <= last / block_size && last >= 0; ++b)
      table[size_t(seq) * max_blocks + b] = blocks[size_t(seq) * max_blocks + b];
  }
  // Grouped: group 0's tables hold other blocks; the kernel must read group 1's alone.
  std::vector<int32_t> upload_tables = table;
  if (s.grouped_tables) {
    upload_tables.assign(size_t(n_seqs) * 2 * max_blocks, 0);
    for (int seq = 0; seq < n_seqs; ++seq)
      for (int b = 0; b < max_blocks; ++b) {
        upload_tables[(size_t(seq) * 2) * max_blocks + b] = blocks[size_t(num_blocks - 1 - b)];
        upload_tables[(size_t(seq) * 2 + 1) * max_blocks + b] = table[size_t(seq) * max_blocks + b];
      }
  }
  const size_t cache_elems = size_t(num_blocks) * block_size * kv_dim;
  const std::vector<uint16_t> k_cache = testing::random_halves(cache_elems, rng);
  const std::vector<uint16_t> v_cache = testing::random_halves(cache_elems, rng);
  const std::vector<float> q = testing::random_floats(size_t(n_tokens) * s.n_head * s.head_dim, rng);
  const float scale = 1.0f / std::sqrt(float(s.head_dim));

  DeviceBuffer<float> q_d(q), out_d(testing::nan_floats(q.size()));
  DeviceBuffer<uint16_t> k_d(k_cache), v_d(v_cache);
  DeviceBuffer<int32_t> seq_d(batch.seq), pos_d(batch.pos), table_d(upload_tables);
  PagedAttentionArgs a;
  a.q = q_d.get();
  a.k_cache = reinterpret_cast<const __half*>(k_d.get());
  a.v_cache = reinterpret_cast<const __half*>(v_d.get());
  a.seq_index = seq_d.get();
  a.positions = pos_d.get();
  a.block_tables = s.grouped_tables ? table_d.get() + max_blocks : table_d.get();
  a.seq_table_stride = s.grouped_tables ? 2 * max_blocks : 0;
  a.out = out_d.get();
  a.n_tokens = n_tokens;
  a.n_head = s.n_head;
  a.n_kv_head = s.n_kv_head;
  a.head_dim = s.head_dim;
  a.block_size = block_size;
  a.max_blocks_per_seq = max_blocks;
  a.scale = scale;
  a.sliding_window = s.window;
  ASSERT_EQ(paged_attention(a, nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> out = out_d.download();

  // F32 dot products of <= 256 terms and F32 sums over <= 300 positions err by
  // about n * 2^-24 of their magnitudes at worst (1e-5 here); the outputs are
  // weighted means of values of about 1, so 1e-4 absolute bounds that with room,
  // while a wrong position, head or block moves an output by ~0.1.
  for (int t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < s.n_head; ++h) {
      const float* got = out.data() + (size_t(t) * s.n_head + h) * s.head_dim;
      std::vector<double> ref(size_t(s.head_dim), 0.0);
      const int seq = batch.seq[size_t(t)], pos = batch.pos[size_t(t)];
      if (seq >= 0) {
        const int g = h / (s.n_head / s.n_kv_head);
        const int first = s.window > 0 ? std::max(0, pos - s.window + 1) : 0;
        auto at = [&](const std::vector<uint16_t>& cache, int j, int d) {
          const size_t block = size_t(table[size_t(seq) * max_blocks + j / block_size]);
          return double(f16_to_f32(cache[(block * block_size + j % block_size) * kv_dim + size_t(g) * s.head_dim + d]));
        };
        std::vector<double> score;
        for (int j = first; j <= pos; ++j) {
          double dot = 0;
          for (int d = 0; d < s.head_dim; ++d)
            dot += double(q[(size_t(t) * s.n_head + h) * s.head_dim + d]) * at(k_cache, j, d);
          score.push_back(scale * dot);
        }
        const double m = *std::max_element(score.begin(), score.end());
        double sum = 0;
        for (double& x : score) sum += (x = std::exp(x - m));
        for (int j = first; j <= pos; ++j)
          for (int d = 0; d < s.head_dim; ++d) ref[size_t(d)] += score[size_t(j - first)] / sum * at(v_cache, j, d);
      }
      for (int d = 0; d < s.head_dim; ++d)
        ASSERT_NEAR(got[d], ref[size_t(d)], 1e-4) << "token " << t << " head " << h << " dim " << d;
    }
  }
}

TEST(CudaAttention, MixedBatchWithGqaMatchesADoubleLoop) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_attention(mixed_batch(), {8, 2, 64, 0}, 81);
  check_attention(mixed_batch(), {8, 2, 64, 0, true}, 91);  // StepUpload's grouped tables
  check_attention(mixed_batch(), {6, 3, 96, 0}, 82);        // head_dim not a power of two
  check_attention(mixed_batch(), {4, 1, 256, 0}, 83);       // the largest head_dim, every query head on one KV head
  check_attention(mixed_batch(), {5, 5, 80, 0}, 84);        // no GQA
}

TEST(CudaAttention, DecodeOfOneToken) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_attention(decode_one(), {8, 2, 64, 0}, 85);
  check_attention(decode_one(), {8, 8, 128, 0}, 86);
}

// Windows shorter than a block, across a block boundary, and longer than a tile.
TEST(CudaAttention, SlidingWindowDropsOldPositions) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  check_attention(mixed_batch(), {8, 2, 64, 5}, 87);
  check_attention(mixed_batch(), {8, 2, 64, 20}, 88);
  check_attention(mixed_batch(), {8, 4, 128, 200}, 89);
  check_attention(mixed_batch(), {8, 2, 64, 40, true}, 92);
  check_attention(decode_one(), {8, 2, 64, 3}, 90);
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
