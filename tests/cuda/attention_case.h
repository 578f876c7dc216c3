// The paged attention test cases, shared by the GPU test (attention_test.cpp)
// and the CPU run of the kernel's own code (attention_emulation_test.cpp):
// random inputs on scattered cache blocks, and the double-precision answer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/attention.h"
#include "cuda_test_util.h"

namespace pagoda::cuda::testing {

struct AttentionBatch {
  std::vector<int32_t> seq, pos;  // per token; seq -1: padding
};

// Sequence 0 is 300 positions long (19 blocks of 16, past two tiles of 128
// positions) and runs its last three; sequence 1 prefills 7; then one padding token.
inline AttentionBatch mixed_batch() {
  AttentionBatch b;
  for (int p : {297, 298, 299}) b.seq.push_back(0), b.pos.push_back(p);
  for (int p = 0; p < 7; ++p) b.seq.push_back(1), b.pos.push_back(p);
  b.seq.push_back(-1), b.pos.push_back(-1);
  return b;
}

// A decode step: one token at position 40 of sequence 1.
inline AttentionBatch decode_one() { return AttentionBatch{{1}, {40}}; }

struct AttentionShape {
  int n_head, n_kv_head, head_dim, window;
  // The tables as StepUpload packs them, [n_seqs][2 groups][max_blocks], the kernel given group 1's.
  bool grouped_tables = false;
  bool sinks = false;  // a sink logit per query head (gpt-oss), some far above every score
  float softcap = 0;   // gemma2's score cap; 0: none
  // Elements past kv_dim between the caches' rows: a KV page slot wider than
  // the layer (model/kv_storage.h); the kernel is given the wider stride.
  int row_pad = 0;
  // Query heads a block takes (PagedAttentionArgs::heads_per_block); 0: the launcher's choice.
  int heads_per_block = 0;
  // Blocks each token's positions are split over (PagedAttentionArgs::splits); 0: the launcher's choice.
  int splits = 0;
};

// Host copies of one call's inputs; args() points the kernel at wherever they were put.
struct AttentionCase {
  static constexpr int kBlockSize = 16, kSeqs = 2, kMaxBlocks = 20, kNumBlocks = 2 * kMaxBlocks + 3;
  AttentionBatch batch;
  AttentionShape shape;
  std::vector<int32_t> table;          // [kSeqs][kMaxBlocks]: what the reference reads
  std::vector<int32_t> upload_tables;  // what the kernel is given (grouped or as table)
  std::vector<uint16_t> k_cache, v_cache;
  std::vector<float> q;
  std::vector<float> sinks;  // [n_head] when shape.sinks
  float scale = 0;

  int n_tokens() const { return int(batch.seq.size()); }
  int kv_dim() const { return shape.n_kv_head * shape.head_dim; }
  int row_stride() const { return kv_dim() + shape.row_pad; }

  PagedAttentionArgs args(const float* q_at, const uint16_t* k_at, const uint16_t* v_at, const int32_t* seq_at,
                          const int32_t* pos_at, const int32_t* tables_at, float* out_at,
                          const float* sinks_at = nullptr, float* split_scratch_at = nullptr) const {
    PagedAttentionArgs a;
    a.q = q_at;
    a.k_cache = reinterpret_cast<const __half*>(k_at);
    a.v_cache = reinterpret_cast<const __half*>(v_at);
    a.seq_index = seq_at;
    a.positions = pos_at;
    a.block_tables = shape.grouped_tables ? tables_at + kMaxBlocks : tables_at;
    a.seq_table_stride = shape.grouped_tables ? 2 * kMaxBlocks : 0;
    a.out = out_at;
    a.n_tokens = n_tokens();
    a.n_head = shape.n_head;
    a.n_kv_head = shape.n_kv_head;
    a.head_dim = shape.head_dim;
    a.block_size = kBlockSize;
    a.max_blocks_per_seq = kMaxBlocks;
    a.scale = scale;
    a.sliding_window = shape.window;
    a.sinks = shape.sinks ? sinks_at : nullptr;
    a.softcap = shape.softcap;
    a.kv_stride = shape.row_pad > 0 ? row_stride() : 0;
    a.heads_per_block = shape.heads_per_block;
    a.splits = shape.splits;
    a.split_scratch = split_scratch_at;
    return a;
  }
};

// The layouts of heads a case runs in: its own (heads_per_block set), else a
// block per query head and blocks of up to `grouped` of a KV head's query
// heads (0: all of them, up to 8).
inline std::vector<int> head_layouts(const AttentionShape& s, int grouped) {
  if (s.heads_per_block > 0) return {s.heads_per_block};
  return {1, grouped > 0 ? grouped : s.n_head / s.n_kv_head};
}

inline std::string describe(const AttentionBatch& b, const AttentionShape& s) {
  return fmt::format("heads {}/{} ({} a block) head_dim {} window {} tokens {} splits {}{}{}{}", s.n_head, s.n_kv_head,
                     s.heads_per_block, s.head_dim, s.window, b.seq.size(), s.splits,
                     s.grouped_tables ? " grouped tables" : "", s.sinks ? " sinks" : "",
                     s.row_pad ? " wider rows" : "");
}

inline AttentionCase make_attention_case(const AttentionBatch& batch, const AttentionShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionCase c;
  c.batch = batch;
  c.shape = s;
  constexpr int bs = AttentionCase::kBlockSize, max_blocks = AttentionCase::kMaxBlocks;
  // Each sequence's blocks are scattered over the cache in random order. Table entries past
  // the last position, and of blocks wholly before every window of the sequence (a sliding
  // group gives them back), are -1: reading one would be out of bounds (memcheck).
  std::vector<int32_t> blocks(AttentionCase::kNumBlocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  c.table.assign(size_t(AttentionCase::kSeqs) * max_blocks, -1);
  for (int seq = 0; seq < AttentionCase::kSeqs; ++seq) {
    int last = -1, first = INT32_MAX;
    for (size_t t = 0; t < batch.seq.size(); ++t)
      if (batch.seq[t] == seq) {
        last = std::max(last, batch.pos[t]);
        first = std::min(first, s.window > 0 ? std::max(0, batch.pos[t] - s.window + 1) : 0);
      }
    for (int b = first / bs; b <= last / bs && last >= 0; ++b)
      c.table[size_t(seq) * max_blocks + b] = blocks[size_t(seq) * max_blocks + b];
  }
  // Grouped: group 0's tables hold other blocks; the kernel must read group 1's alone.
  c.upload_tables = c.table;
  if (s.grouped_tables) {
    c.upload_tables.assign(size_t(AttentionCase::kSeqs) * 2 * max_blocks, 0);
    for (int seq = 0; seq < AttentionCase::kSeqs; ++seq)
      for (int b = 0; b < max_blocks; ++b) {
        c.upload_tables[(size_t(seq) * 2) * max_blocks + b] = blocks[size_t(AttentionCase::kNumBlocks - 1 - b)];
        c.upload_tables[(size_t(seq) * 2 + 1) * max_blocks + b] = c.table[size_t(seq) * max_blocks + b];
      }
  }
  const size_t cache_elems = size_t(AttentionCase::kNumBlocks) * bs * c.row_stride();
  c.k_cache = random_halves(cache_elems, rng);
  c.v_cache = random_halves(cache_elems, rng);
  c.q = random_floats(size_t(c.n_tokens()) * s.n_head * s.head_dim, rng);
  c.scale = 1.0f / std::sqrt(float(s.head_dim));
  if (s.sinks) {
    c.sinks = random_floats(size_t(s.n_head), rng, 2.0f);
    c.sinks[0] = 30.0f;  // the sink takes nearly all the weight: outputs near zero
  }
  return c;
}

// Checks out [n_tokens][n_head][head_dim] against a double loop. F32 dot
// products of <= 256 terms and F32 sums over <= 300 positions err by about
// n * 2^-24 of their magnitudes at worst (1e-5 here); the outputs are weighted
// means of values of about 1, so 1e-4 absolute bounds that with room, while a
// wrong position, head or block moves an output by ~0.1. Padding tokens: zeros.
inline void expect_attention_matches(const AttentionCase& c, const std::vector<float>& out) {
  const AttentionShape& s = c.shape;
  constexpr int bs = AttentionCase::kBlockSize;
  for (int t = 0; t < c.n_tokens(); ++t) {
    for (int h = 0; h < s.n_head; ++h) {
      const float* got = out.data() + (size_t(t) * s.n_head + h) * s.head_dim;
      std::vector<double> ref(size_t(s.head_dim), 0.0);
      const int seq = c.batch.seq[size_t(t)], pos = c.batch.pos[size_t(t)];
      if (seq >= 0) {
        const int g = h / (s.n_head / s.n_kv_head);
        const int first = s.window > 0 ? std::max(0, pos - s.window + 1) : 0;
        auto at = [&](const std::vector<uint16_t>& cache, int j, int d) {
          const size_t block = size_t(c.table[size_t(seq) * AttentionCase::kMaxBlocks + j / bs]);
          return double(f16_to_f32(cache[(block * bs + j % bs) * c.row_stride() + size_t(g) * s.head_dim + d]));
        };
        std::vector<double> score;
        for (int j = first; j <= pos; ++j) {
          double dot = 0;
          for (int d = 0; d < s.head_dim; ++d)
            dot += double(c.q[(size_t(t) * s.n_head + h) * s.head_dim + d]) * at(c.k_cache, j, d);
          score.push_back(s.softcap > 0 ? s.softcap * std::tanh(c.scale * dot / s.softcap) : c.scale * dot);
        }
        const double sink = s.sinks ? c.sinks[size_t(h)] : -INFINITY;
        const double m = std::max(sink, *std::max_element(score.begin(), score.end()));
        double sum = std::exp(sink - m);  // the sink's share goes to no position
        for (double& x : score) sum += (x = std::exp(x - m));
        for (int j = first; j <= pos; ++j)
          for (int d = 0; d < s.head_dim; ++d) ref[size_t(d)] += score[size_t(j - first)] / sum * at(c.v_cache, j, d);
      }
      for (int d = 0; d < s.head_dim; ++d)
        ASSERT_NEAR(got[d], ref[size_t(d)], 1e-4) << "token " << t << " head " << h << " dim " << d;
    }
  }
}

}  // namespace pagoda::cuda::testing
