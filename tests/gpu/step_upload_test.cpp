// The packed step: each section where the layout says, a round trip of
// random batches, and no upload of a batch that would write out of bounds.
#include "gpu/step_upload.h"

#include <gtest/gtest.h>

#include <random>

#include "util/error.h"

namespace pagoda::gpu {
namespace {

using Words = std::vector<int32_t>;

std::vector<int32_t> vec(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST(StepUpload, PacksEachSectionWhereTheLayoutSays) {
  // A 6-token prefill chunk beside one decode token, blocks of 4.
  const std::vector<int32_t> prefill = {7, 2}, decode = {1, 3, 5};
  Batch b;
  b.add_sequence(prefill, 11);
  b.add_sequence(decode, 12);
  for (int p = 0; p < 6; ++p) b.add(100 + p, 0, p, p == 5);
  b.add(200, 1, 9, true);
  const StepUpload u = StepUpload::pack(b, 4, 8);
  EXPECT_EQ(vec(u.words().first(StepUpload::kHeaderWords)), (Words{7, 2, 1, 3, 2, 4, 0}));
  EXPECT_EQ(vec(u.tokens()), (Words{100, 101, 102, 103, 104, 105, 200}));
  EXPECT_EQ(vec(u.positions()), (Words{0, 1, 2, 3, 4, 5, 9}));
  EXPECT_EQ(vec(u.seq_of()), (Words{0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(vec(u.slots(0)), (Words{28, 29, 30, 31, 8, 9, 21}));  // block * 4 + pos % 4
  EXPECT_EQ(vec(u.table(0, 0)), (Words{7, 2, kNoBlock}));
  EXPECT_EQ(vec(u.table(1, 0)), (Words{1, 3, 5}));
  EXPECT_EQ(vec(u.seq_len()), (Words{6, 10}));
  EXPECT_EQ(vec(u.logit_rows()), (Words{5, 6}));
  EXPECT_EQ(u.bytes(), u.words().size() * 4);
  EXPECT_EQ(u.words().size(),
            size_t(StepUpload::kHeaderWords + 4 * 7 + 2 * 3 + 2 + 2 + 2 * 2));  // nothing else travels
}

TEST(StepUpload, RandomBatchesOfTwoGroupsComeBackAsTheyWent) {
  std::mt19937 rng(3);
  for (int round = 0; round < 200; ++round) {
    const int bs = 1 + int(rng() % 16), seqs = 1 + int(rng() % 6), blocks = 64;
    std::vector<std::vector<int32_t>> own(size_t(seqs) * 2);
    Batch b;
    b.num_groups = 2;
    std::vector<int> first(size_t(seqs), 0), count(size_t(seqs), 0);
    for (int s = 0; s < seqs; ++s) {
      first[size_t(s)] = int(rng() % 40);
      count[size_t(s)] = 1 + int(rng() % 9);
      const int used = (first[size_t(s)] + count[size_t(s)] + bs - 1) / bs;
      for (int g = 0; g < 2; ++g)
        for (int i = 0; i < used; ++i) own[size_t(s) * 2 + size_t(g)].push_back(int32_t(rng() % blocks));
      if (first[size_t(s)] >= bs && rng() % 2)
        own[size_t(s) * 2 + 1][0] = kNoBlock;  // a sliding group gave its first back
      const std::span<const int32_t> t[2] = {own[size_t(s) * 2], own[size_t(s) * 2 + 1]};
      b.add_sequence(t, uint64_t(s));
    }
    for (int s = 0; s < seqs; ++s)
      for (int i = 0; i < count[size_t(s)]; ++i) b.add(int32_t(rng() % 1000), s, first[size_t(s)] + i, rng() % 3 == 0);
    std::shuffle(b.tokens.begin(), b.tokens.end(), rng);  // tokens of sequences interleaved
    const StepUpload u = StepUpload::pack(b, bs, blocks);
    std::vector<std::vector<int32_t>> tables;
    const Batch back = u.unpack(tables);
    ASSERT_EQ(back.tokens.size(), b.tokens.size());
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      EXPECT_EQ(back.tokens[i].token, b.tokens[i].token);
      EXPECT_EQ(back.tokens[i].seq, b.tokens[i].seq);
      EXPECT_EQ(back.tokens[i].pos, b.tokens[i].pos);
      EXPECT_EQ(back.tokens[i].logits, b.tokens[i].logits);
      for (int g = 0; g < 2; ++g) {
        const auto t = b.table(b.tokens[i].seq, g);
        const int32_t block = t[size_t(b.tokens[i].pos / bs)];
        EXPECT_EQ(u.slots(g)[i], block * bs + b.tokens[i].pos % bs);
      }
    }
    for (int s = 0; s < seqs; ++s)
      for (int g = 0; g < 2; ++g) EXPECT_EQ(vec(back.table(s, g)), own[size_t(s) * 2 + size_t(g)]);
  }
}

// Three logits rows, the first and last sampled on the device: those go
// first, in the sampling rows' order, and their records travel beside.
Batch three_rows() {
  static const std::vector<int32_t> table = {0, 1};
  Batch b;
  b.add_sequence(table, 1);
  b.add_sequence(table, 2);
  b.add_sequence(table, 3);
  for (int s = 0; s < 3; ++s) {
    b.add(10 * s, s, 0, false);
    b.add(10 * s + 1, s, 1, true);
  }
  return b;
}

StepSampling sampling_of_rows_0_and_2() {
  StepSampling sp;
  sp.row_of = {1, -1, 0};  // row 2 is sampling row 0
  sp.rows.resize(2);
  sp.adjusts = {{3, 1.0f}, {4, -1.0f}};
  sp.penalties = {{5, 2}};
  sp.rows[1].adjust_count = 2;
  sp.rows[0].penalty_count = 1;
  return sp;
}

TEST(StepUpload, SampledRowsComeFirstWithTheirRecords) {
  const StepUpload u = StepUpload::pack(three_rows(), 4, 2, sampling_of_rows_0_and_2(), 16);
  EXPECT_EQ(u.num_sampled(), 2);
  EXPECT_EQ(vec(u.logit_rows()), (Words{5, 1, 3}));  // sampling rows 0 and 1 (tokens 5 and 1), then token 3
  ASSERT_EQ(u.sampling_rows().size(), 2u);
  EXPECT_EQ(u.sampling_rows()[1].adjust_count, 2);
  EXPECT_EQ(u.adjusts().size(), 2u);
  EXPECT_EQ(u.penalties().size(), 1u);
  std::vector<std::vector<int32_t>> tables;
  const Batch back = u.unpack(tables);
  for (size_t i = 0; i < back.tokens.size(); ++i) EXPECT_EQ(back.tokens[i].logits, i % 2 == 1);
  // Without sampling: the batch's order, nothing beside.
  const StepUpload plain = StepUpload::pack(three_rows(), 4, 2);
  EXPECT_EQ(plain.num_sampled(), 0);
  EXPECT_EQ(vec(plain.logit_rows()), (Words{1, 3, 5}));
  EXPECT_TRUE(plain.adjusts().empty());
}

TEST(StepUpload, SamplingRecordsThatWouldReadOrWriteOutOfBoundsAreRefused) {
  auto refused = [](auto&& spoil) {
    StepSampling sp = sampling_of_rows_0_and_2();
    spoil(sp);
    EXPECT_THROW(StepUpload::pack(three_rows(), 4, 2, sp, 16), InvalidArgument);
  };
  refused([](StepSampling& sp) { sp.row_of.pop_back(); });      // not one entry a row
  refused([](StepSampling& sp) { sp.row_of[1] = 2; });          // no such sampling row
  refused([](StepSampling& sp) { sp.row_of[0] = 0; });          // one sampling row twice, the other never
  refused([](StepSampling& sp) { sp.adjusts[1].token = 16; });  // outside the vocabulary
  refused([](StepSampling& sp) { sp.penalties[0].token = -1; });
  refused([](StepSampling& sp) { sp.rows[1].adjust_begin = 1; });  // past the list's end
  refused([](StepSampling& sp) { sp.rows[0].penalty_count = -1; });
  refused([](StepSampling& sp) { sp.rows[0].n_logprobs = 21; });
}

TEST(StepUpload, NothingThatWouldWriteOutOfBoundsIsPacked) {
  const std::vector<int32_t> ok = {0, 1}, far = {0, 8}, negative = {0, -7}, short_table = {0};
  auto one = [](const std::vector<int32_t>& table, int pos) {
    Batch b;
    b.add_sequence(table);
    b.add(1, 0, pos, true);
    return b;
  };
  EXPECT_NO_THROW(StepUpload::pack(one(ok, 5), 4, 8));
  EXPECT_THROW(StepUpload::pack(one(far, 5), 4, 8), InvalidArgument);       // block 8 of a pool of 8
  EXPECT_THROW(StepUpload::pack(one(negative, 1), 4, 8), InvalidArgument);  // a bad id anywhere in a table
  EXPECT_THROW(StepUpload::pack(one(short_table, 5), 4, 8), InvalidArgument);
  EXPECT_THROW(StepUpload::pack(one(ok, -1), 4, 8), InvalidArgument);
  EXPECT_THROW(StepUpload::pack(Batch{}, 4, 8), InvalidArgument);
}

// Nor one whose attention would read a block a table lacks: a hole in a full
// group's table, or one inside a sliding group's window (behind it is fine).
TEST(StepUpload, NothingThatWouldReadOutOfBoundsIsLaunched) {
  // Two groups, blocks of 4: full attention, and a window of 6. The token at position 9 reads
  // 0..9 in the first and 4..9 in the second: blocks 0-2 and 1-2.
  auto step = [](const std::vector<int32_t>& full, const std::vector<int32_t>& sliding) {
    Batch b;
    b.num_groups = 2;
    const std::span<const int32_t> t[2] = {full, sliding};
    b.add_sequence(t);
    b.add(1, 0, 9, true);
    return StepUpload::pack(b, 4, 16);
  };
  const std::vector<int32_t> windows = {0, 6};
  EXPECT_NO_THROW(step({0, 1, 2}, {kNoBlock, 4, 5}).check_attended_blocks(windows));
  EXPECT_THROW(step({0, kNoBlock, 2}, {kNoBlock, 4, 5}).check_attended_blocks(windows), InvalidArgument);
  EXPECT_THROW(step({0, 1, 2}, {kNoBlock, kNoBlock, 5}).check_attended_blocks(windows), InvalidArgument);
  EXPECT_THROW(step({0, 1, 2}, {3, 4, 5}).check_attended_blocks(std::vector<int32_t>{0}), InvalidArgument);
}

// A hybrid's step: each sequence's state buffers after the logits rows, back
// through unpack; none named where the batch has no state.
TEST(StepUpload, RecurrentStateBuffersTravelPerSequence) {
  const std::vector<int32_t> t0 = {0}, t1 = {1}, t2 = {2};
  Batch b;
  b.add_sequence(t0);
  b.add_sequence(t1);
  b.add_sequence(t2);
  b.set_state(0, kNoState, 4);
  b.set_state(1, 5, 2);
  b.set_state(2, 0, kNoState);
  for (int p = 0; p < 3; ++p) b.add(10 + p, 0, p, p == 2);
  b.add(20, 1, 7, true);
  b.add(30, 2, 3, true);
  const StepUpload u = StepUpload::pack(b, 16, 4, {}, 0, 6);
  EXPECT_EQ(vec(u.state_in()), (Words{kNoState, 5, 0}));
  EXPECT_EQ(vec(u.state_out()), (Words{4, 2, kNoState}));
  EXPECT_EQ(vec(u.logit_rows()), (Words{2, 3, 4}));
  EXPECT_EQ(int64_t(u.words().size()), StepUpload::words_for(5, 3, 1, 1, 3));
  std::vector<std::vector<int32_t>> tables;
  const Batch back = u.unpack(tables);
  EXPECT_EQ(back.state_in, b.state_in);
  EXPECT_EQ(back.state_out, b.state_out);
  const StepUpload again = StepUpload::from_words({u.words().begin(), u.words().end()}, {}, 4, 6);
  EXPECT_EQ(vec(again.state_out()), vec(u.state_out()));

  Batch plain;
  plain.add_sequence(t0);
  plain.add(1, 0, 0, true);
  const StepUpload p = StepUpload::pack(plain, 16, 4);
  EXPECT_EQ(vec(p.state_in()), (Words{kNoState}));
  EXPECT_EQ(vec(p.state_out()), (Words{kNoState}));
  EXPECT_TRUE(p.unpack(tables).state_in.empty());
}

// A buffer outside the pool would be read or written out of bounds; one read
// and written at once, or a sequence's tokens apart or out of order, would
// break the recurrence: none is packed.
TEST(StepUpload, StateTheRecurrenceCannotRunIsRefused) {
  const std::vector<int32_t> t0 = {0}, t1 = {1};
  auto batch = [&](StateBuffer in, StateBuffer out, std::vector<std::pair<int, int>> tokens) {
    Batch b;
    b.add_sequence(t0);
    b.add_sequence(t1);
    b.set_state(0, in, out);
    b.set_state(1, kNoState, 3);
    for (const auto& [seq, pos] : tokens) b.add(1, seq, pos, true);
    return b;
  };
  const std::vector<std::pair<int, int>> fine = {{0, 0}, {0, 1}, {1, 5}};
  EXPECT_NO_THROW(StepUpload::pack(batch(0, 1, fine), 16, 4, {}, 0, 4));
  EXPECT_THROW(StepUpload::pack(batch(0, 4, fine), 16, 4, {}, 0, 4), InvalidArgument);   // outside
  EXPECT_THROW(StepUpload::pack(batch(-2, 1, fine), 16, 4, {}, 0, 4), InvalidArgument);  // outside
  EXPECT_THROW(StepUpload::pack(batch(0, 1, fine), 16, 4), InvalidArgument);             // no pool at all
  EXPECT_THROW(StepUpload::pack(batch(1, 1, fine), 16, 4, {}, 0, 4), InvalidArgument);   // read and written
  EXPECT_THROW(StepUpload::pack(batch(0, 1, {{0, 0}, {1, 5}, {0, 1}}), 16, 4, {}, 0, 4), InvalidArgument);  // apart
  EXPECT_THROW(StepUpload::pack(batch(0, 1, {{0, 1}, {0, 0}, {1, 5}}), 16, 4, {}, 0, 4), InvalidArgument);  // order
  EXPECT_THROW(StepUpload::pack(batch(0, 1, {{0, 0}, {0, 2}, {1, 5}}), 16, 4, {}, 0, 4), InvalidArgument);  // a gap
  EXPECT_THROW(StepUpload::pack(batch(0, 1, {{0, 0}, {0, 1}}), 16, 4, {}, 0, 4), InvalidArgument);  // none for seq 1
}

}  // namespace
}  // namespace pagoda::gpu
