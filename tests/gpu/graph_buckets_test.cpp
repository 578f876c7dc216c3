// Pure-decode steps padded to a CUDA graph's shape (gpu/graph_buckets.h):
// the bucket and width chosen, other steps refused, the real part unchanged,
// padding tokens that read block 0 only and write nowhere, sampled rows first.
#include "gpu/graph_buckets.h"

#include <gtest/gtest.h>

#include <random>

#include "util/error.h"

namespace pagoda::gpu {
namespace {

std::vector<int32_t> graph_vec(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

constexpr int32_t kGraphBlockSize = 4, kGraphPool = 64;

// A decode step of `n` sequences on scattered tables of 1..5 blocks; each
// token's logits wanted, every third sampled on the device.
struct DecodeStep {
  std::vector<std::vector<int32_t>> tables;
  Batch batch;
  StepSampling sampling;
};
DecodeStep decode_step(int n, std::mt19937& rng) {
  DecodeStep d;
  d.tables.resize(size_t(n));
  for (auto& t : d.tables)
    for (int i = 0, len = 1 + int(rng() % 5); i < len; ++i) t.push_back(int32_t(1 + rng() % (kGraphPool - 1)));
  for (int s = 0; s < n; ++s) d.batch.add_sequence(d.tables[size_t(s)], uint64_t(s));
  for (int s = 0; s < n; ++s) {
    const int len = int(d.tables[size_t(s)].size()) * kGraphBlockSize;
    d.batch.add(int32_t(1 + rng() % 500), s, len - 1 - int(rng() % kGraphBlockSize), true);
  }
  d.sampling.row_of.assign(size_t(n), -1);
  for (int s = 0; s < n; s += 3) {
    d.sampling.row_of[size_t(s)] = int32_t(d.sampling.rows.size());
    RowSampling r{};
    r.n_logprobs = -1;
    d.sampling.rows.push_back(r);
  }
  return d;
}

TEST(GraphBuckets, TheSmallestBucketAndAPowerOfTwoWidth) {
  EXPECT_EQ(graph_bucket(1), 1);
  EXPECT_EQ(graph_bucket(2), 2);
  EXPECT_EQ(graph_bucket(3), 4);
  EXPECT_EQ(graph_bucket(8), 8);
  EXPECT_EQ(graph_bucket(9), 16);
  EXPECT_EQ(graph_bucket(129), 256);
  EXPECT_EQ(graph_bucket(256), 256);
  EXPECT_THROW(graph_bucket(257), InvalidArgument);
  EXPECT_THROW(graph_bucket(0), InvalidArgument);
  EXPECT_EQ(graph_width(1, 128), 1);
  EXPECT_EQ(graph_width(3, 128), 4);
  EXPECT_EQ(graph_width(65, 128), 128);
  EXPECT_EQ(graph_width(65, 100), 100);  // capped at the workspace's tables
  EXPECT_EQ(graph_width(100, 100), 100);
  EXPECT_THROW(graph_width(101, 100), InvalidArgument);
}

TEST(GraphBuckets, OnlyPureDecodeStepsOfAtMost256TokensHaveAGraph) {
  std::mt19937 rng(5);
  const DecodeStep d = decode_step(5, rng);
  const StepUpload u = StepUpload::pack(d.batch, kGraphBlockSize, kGraphPool);
  EXPECT_TRUE(graphable(u));
  EXPECT_EQ(graph_key(u, 64), (GraphKey{8, u.table_width() <= 4 ? 4 : 8}));

  Batch prefill = d.batch;  // a sequence brings two tokens
  prefill.tokens[0].pos -= 1;
  prefill.tokens[0].logits = false;
  prefill.add(7, 0, d.batch.tokens[0].pos, true);
  const StepUpload p = StepUpload::pack(prefill, kGraphBlockSize, kGraphPool);
  EXPECT_FALSE(graphable(p));
  EXPECT_THROW(pad_for_graph(p, {8, 8}, kGraphPool), InvalidArgument);

  Batch unwanted = d.batch;  // a token whose logits are not wanted
  unwanted.tokens[2].logits = false;
  EXPECT_FALSE(graphable(StepUpload::pack(unwanted, kGraphBlockSize, kGraphPool)));

  const DecodeStep big = decode_step(257, rng);
  EXPECT_FALSE(graphable(StepUpload::pack(big.batch, kGraphBlockSize, kGraphPool)));
  const DecodeStep largest = decode_step(256, rng);
  EXPECT_TRUE(graphable(StepUpload::pack(largest.batch, kGraphBlockSize, kGraphPool)));

  EXPECT_THROW(pad_for_graph(u, {4, 8}, kGraphPool), InvalidArgument);  // fewer tokens than the step's
  EXPECT_THROW(pad_for_graph(u, {8, u.table_width() - 1}, kGraphPool), InvalidArgument);
}

TEST(GraphBuckets, APaddedStepIsTheSameStepWithPaddingThatReadsBlockZeroAndWritesNowhere) {
  std::mt19937 rng(11);
  for (int n : {1, 2, 3, 5, 8, 13, 31, 64, 100, 200}) {
    SCOPED_TRACE(n);
    const DecodeStep d = decode_step(n, rng);
    const StepUpload u = StepUpload::pack(d.batch, kGraphBlockSize, kGraphPool, d.sampling, 1000);
    const GraphKey key = graph_key(u, 64);
    const StepUpload p = pad_for_graph(u, key, kGraphPool);
    const int32_t T = u.num_tokens(), P = key.tokens;
    ASSERT_EQ(p.num_tokens(), P);
    ASSERT_EQ(p.num_seqs(), P);
    ASSERT_EQ(p.num_logits(), P);
    ASSERT_EQ(p.table_width(), key.width);
    EXPECT_EQ(p.num_sampled(), u.num_sampled());
    EXPECT_EQ(p.sampling_rows().size(), u.sampling_rows().size());
    EXPECT_EQ(p.block_size(), u.block_size());
    EXPECT_EQ(p.words().size(), size_t(StepUpload::kHeaderWords + 4 * P + P * key.width + 2 * P + 2 * P));

    // The real part: the same tokens, positions, sequences, slots, tables and rows in their order.
    EXPECT_EQ(graph_vec(p.tokens().first(size_t(T))), graph_vec(u.tokens()));
    EXPECT_EQ(graph_vec(p.positions().first(size_t(T))), graph_vec(u.positions()));
    EXPECT_EQ(graph_vec(p.seq_of().first(size_t(T))), graph_vec(u.seq_of()));
    EXPECT_EQ(graph_vec(p.slots(0).first(size_t(T))), graph_vec(u.slots(0)));
    EXPECT_EQ(graph_vec(p.seq_len().first(size_t(T))), graph_vec(u.seq_len()));
    EXPECT_EQ(graph_vec(p.logit_rows().first(size_t(T))), graph_vec(u.logit_rows()));  // sampled rows first
    std::vector<std::vector<int32_t>> want_tables, got_tables;
    const Batch want = u.unpack(want_tables), got = p.unpack(got_tables);
    for (int32_t s = 0; s < T; ++s) {
      EXPECT_EQ(graph_vec(got.table(s)), graph_vec(want.table(s))) << "sequence " << s;
      const auto wide = p.table(s, 0);
      EXPECT_TRUE(std::all_of(wide.begin() + u.table_width(), wide.end(), [](int32_t b) { return b == kNoBlock; }));
    }
    for (int32_t i = 0; i < T; ++i) {
      EXPECT_EQ(got.tokens[size_t(i)].token, want.tokens[size_t(i)].token);
      EXPECT_EQ(got.tokens[size_t(i)].pos, want.tokens[size_t(i)].pos);
      EXPECT_EQ(got.tokens[size_t(i)].seq, want.tokens[size_t(i)].seq);
    }

    // The padding: token 0 at position 0, its own sequence one long, block 0 only, no K/V written.
    for (int32_t i = T; i < P; ++i) {
      EXPECT_EQ(p.tokens()[size_t(i)], 0);
      EXPECT_EQ(p.positions()[size_t(i)], 0);
      EXPECT_EQ(p.seq_of()[size_t(i)], i);
      EXPECT_EQ(p.slots(0)[size_t(i)], -1);
      EXPECT_EQ(p.seq_len()[size_t(i)], 1);
      EXPECT_EQ(p.table(i, 0)[0], 0);
      EXPECT_EQ(got.table(i).size(), 1u);       // the blocks its attention reads: block 0
      EXPECT_EQ(p.logit_rows()[size_t(i)], i);  // after every real row
    }
  }
}

TEST(GraphBuckets, AnUploadFromWordsIsCheckedAsAPackedOne) {
  std::mt19937 rng(2);
  const DecodeStep d = decode_step(3, rng);
  const StepUpload u = StepUpload::pack(d.batch, kGraphBlockSize, kGraphPool, d.sampling, 1000);
  const std::vector<int32_t> good(u.words().begin(), u.words().end());
  StepSampling records;
  records.rows.assign(u.sampling_rows().begin(), u.sampling_rows().end());
  EXPECT_EQ(graph_vec(StepUpload::from_words(good, records, kGraphPool).words()), good);
  auto broken = [&](size_t at, int32_t value) {
    std::vector<int32_t> w = good;
    w[at] = value;
    return w;
  };
  const size_t tokens = StepUpload::kHeaderWords, seqs = tokens + 2 * 3, slots = tokens + 3 * 3, tables = slots + 3,
               rows = good.size() - 3;
  EXPECT_THROW(StepUpload::from_words(broken(0, 4), records, kGraphPool), InvalidArgument);  // T
  EXPECT_THROW(StepUpload::from_words(broken(seqs, 3), records, kGraphPool), InvalidArgument);
  EXPECT_THROW(StepUpload::from_words(broken(slots, kGraphPool * kGraphBlockSize), records, kGraphPool),
               InvalidArgument);
  EXPECT_THROW(StepUpload::from_words(broken(slots, -2), records, kGraphPool), InvalidArgument);
  EXPECT_NO_THROW(StepUpload::from_words(broken(slots, -1), records, kGraphPool));
  EXPECT_THROW(StepUpload::from_words(broken(tables, kGraphPool), records, kGraphPool), InvalidArgument);
  EXPECT_THROW(StepUpload::from_words(broken(rows, 3), records, kGraphPool), InvalidArgument);
  EXPECT_THROW(StepUpload::from_words(good, {}, kGraphPool), InvalidArgument);  // D records missing
  std::vector<int32_t> short_words = good;
  short_words.pop_back();
  EXPECT_THROW(StepUpload::from_words(short_words, records, kGraphPool), InvalidArgument);
}

}  // namespace
}  // namespace pagoda::gpu
