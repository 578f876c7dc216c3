// KV groups in the block manager (kv_groups.h): the grouping rule, one table
// per group taken all or nothing, sliding groups giving back what their
// window left behind, prefix hits every group can serve, copy-on-write per
// group, capacity figures, and audit() catching broken group tables.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/block_manager.h"
#include "kv/kv_groups.h"
#include "kv_test_util.h"
#include "test_peer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace kvtest;
using Peer = BlockManagerTestPeer;
using V = std::vector<BlockId>;

// Gemma 3's layout: every 6th layer global, the others local.
std::vector<int32_t> gemma3_windows(int n_layer, int window) {
  std::vector<int32_t> w(size_t(n_layer), window);
  for (int l = 5; l < n_layer; l += 6) w[size_t(l)] = 0;
  return w;
}

TEST(KvGroups, Gemma3OneBillionIsTwoFullAndElevenSlidingGroupsOfTwo) {
  const KvGroups g = KvGroups::of_layers(gemma3_windows(26, 512));
  EXPECT_EQ(g.layers_per_group, 2);
  ASSERT_EQ(g.num_groups(), 13);
  EXPECT_EQ(g.windows[0], 0);
  EXPECT_EQ(g.windows[1], 0);
  for (int i = 2; i < 13; ++i) EXPECT_EQ(g.windows[size_t(i)], 512);
  // Global layers 5, 11 | 17, 23; local layers in order, two a group.
  EXPECT_EQ(g.group_of[5], 0);
  EXPECT_EQ(g.slot_of[5], 0);
  EXPECT_EQ(g.group_of[11], 0);
  EXPECT_EQ(g.slot_of[11], 1);
  EXPECT_EQ(g.group_of[17], 1);
  EXPECT_EQ(g.group_of[23], 1);
  EXPECT_EQ(g.group_of[0], 2);
  EXPECT_EQ(g.slot_of[1], 1);
  EXPECT_EQ(g.group_of[6], 4);  // 0-1, 2-3, 4-6 (5 is global)
  EXPECT_EQ(g.slot_of[6], 1);
  EXPECT_EQ(g.group_of[25], 12);
  // Every (group, slot) names exactly one layer.
  std::vector<int> seen(size_t(g.num_groups() * g.layers_per_group), 0);
  for (int l = 0; l < 26; ++l) ++seen[size_t(g.group_of[size_t(l)] * g.layers_per_group + g.slot_of[size_t(l)])];
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(KvGroups, WithoutWindowsOneGroupOfEveryLayer) {
  const KvGroups g = KvGroups::of_layers(std::vector<int32_t>(16, 0));
  const KvGroups single = KvGroups::single(16);
  EXPECT_EQ(g.layers_per_group, 16);
  EXPECT_EQ(g.windows, std::vector<int32_t>{0});
  EXPECT_EQ(g.group_of, single.group_of);
  EXPECT_EQ(g.slot_of, single.slot_of);
  EXPECT_EQ(g.pages_at_rest(1000, 16), 63);
  EXPECT_EQ(g.pages_at_most(1000, 512, 16), 63);
  EXPECT_EQ(g.max_tokens(63, 512, 16), 63 * 16);
}

TEST(KvGroups, Gemma2AlternatesOneToOne) {
  std::vector<int32_t> w(8, 0);
  for (size_t l = 0; l < 8; l += 2) w[l] = 4096;
  const KvGroups g = KvGroups::of_layers(w);
  EXPECT_EQ(g.layers_per_group, 4);
  EXPECT_EQ(g.windows, (std::vector<int32_t>{0, 4096}));
}

TEST(KvGroups, PageCountsAtEightThousandTokens) {
  const KvGroups g = KvGroups::of_layers(gemma3_windows(26, 512));
  // Full: 2 x 512 blocks; sliding: 11 x the blocks of its last window.
  EXPECT_EQ(g.pages_at_rest(8192, 16), 2 * 512 + 11 * (512 - (8192 - 511) / 16));
  EXPECT_EQ(g.pages_at_most(8192, 512, 16), 2 * 512 + 11 * ((512 + 511 + 15) / 16 + 1));
  // A page of one group of all 26 layers is 13 of these: at 8k, 6656 of
  // them against 1376.
  EXPECT_EQ(KvGroups::single(26).pages_at_rest(8192, 16) * 13, 6656);
  EXPECT_EQ(g.pages_at_rest(8192, 16), 1376);
  EXPECT_GE(g.max_tokens(g.pages_at_most(8192, 512, 16), 512, 16), 8192);
  EXPECT_LT(g.max_tokens(g.pages_at_most(8192, 512, 16) - 1, 512, 16), 8192);
}

// Block size 4; group 0 full, group 1 with a window of 8 tokens.
BlockManager two_groups(int32_t blocks = 40, bool caching = true, AllocPolicy policy = AllocPolicy::kPaged) {
  BlockManagerConfig c;
  c.num_blocks = blocks;
  c.block_size = 4;
  c.prefix_caching = caching;
  c.policy = policy;
  c.group_windows = {0, 8};
  return BlockManager(c);
}

int32_t held(const BlockManager& m, SeqId seq, int32_t group) {
  const auto t = m.block_table(seq, group);
  return int32_t(std::count_if(t.begin(), t.end(), [](BlockId b) { return b != kNoBlock; }));
}

TEST(SlidingWindow, EveryGroupGetsATableAllOrNothing) {
  BlockManager m = two_groups(10);
  EXPECT_EQ(m.num_groups(), 2);
  EXPECT_EQ(m.blocks_needed(1, 13), 8);  // 4 blocks in each group
  ASSERT_TRUE(m.allocate(1, 13));
  EXPECT_EQ(m.block_table(1, 0).size(), 4u);
  EXPECT_EQ(m.block_table(1, 1).size(), 4u);
  EXPECT_EQ(m.num_free_blocks(), 2);
  expect_clean(m);
  // 3 more in each group do not fit in 2: nothing changes.
  const AllocResult r = m.allocate(2, 9);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 4);
  EXPECT_FALSE(m.contains(2));
  EXPECT_EQ(m.num_free_blocks(), 2);
  expect_clean(m);
}

TEST(SlidingWindow, CommitGivesBackTheBlocksBehindTheWindow) {
  BlockManager m = two_groups();
  const auto prompt = iota_tokens(0, 20);
  admit(m, 1, prompt);
  // The next query (position 20) reads 13..20: blocks 0-2 are behind it.
  EXPECT_EQ(held(m, 1, 0), 5);
  EXPECT_EQ(held(m, 1, 1), 2);
  const auto sliding = m.block_table(1, 1);
  EXPECT_EQ(sliding[0], kNoBlock);
  EXPECT_EQ(sliding[2], kNoBlock);
  EXPECT_NE(sliding[3], kNoBlock);
  EXPECT_EQ(m.num_free_blocks(), 40 - 7);
  expect_clean(m);
  // Decoding: the sliding group holds at most 3 blocks, the full one grows.
  std::vector<TokenId> tokens = prompt;
  for (int t = 20; t < 60; ++t) {
    tokens.push_back(t);
    ASSERT_TRUE(m.allocate(1, int32_t(tokens.size())));
    EXPECT_LE(held(m, 1, 1), 4);  // 3 between steps, one more while a step crosses a block
    m.commit(1, tokens, int32_t(tokens.size()));
    EXPECT_LE(held(m, 1, 1), 3);
    expect_clean(m);
  }
  EXPECT_EQ(held(m, 1, 0), 15);
  m.free(1);
  EXPECT_EQ(m.num_free_blocks(), 40);
  expect_clean(m);
}

TEST(SlidingWindow, ChunkedPrefillHoldsTheChunkThenItsWindow) {
  BlockManager m = two_groups();
  const auto prompt = iota_tokens(0, 40);
  ASSERT_TRUE(m.allocate(1, 16));
  m.commit(1, prompt, 16);
  EXPECT_EQ(held(m, 1, 1), 2);  // 9..16: blocks 2 and 3
  EXPECT_EQ(m.blocks_needed(1, 32), 4 + 4);
  ASSERT_TRUE(m.allocate(1, 32));
  EXPECT_EQ(held(m, 1, 1), 6);
  m.commit(1, prompt, 32);
  EXPECT_EQ(held(m, 1, 1), 2);
  expect_clean(m);
}

TEST(SlidingWindow, WithoutPrefixCachingFreedBlocksGoToTheHead) {
  BlockManager m = two_groups(40, false);
  admit(m, 1, iota_tokens(0, 20));
  const auto queue = m.free_queue();
  EXPECT_FALSE(m.block_hash(queue.front()).has_value());
  EXPECT_EQ(held(m, 1, 1), 2);
  expect_clean(m);
}

TEST(SlidingWindow, PrefixHitNeedsFullBlocksAndTheWindowsLastBlocks) {
  BlockManager m = two_groups(40);
  const auto a = iota_tokens(0, 24);
  admit(m, 1, a);
  // Sequence 1 holds all 6 full blocks and sliding blocks 4-5 (17..24).
  const V full(m.block_table(1, 0).begin(), m.block_table(1, 0).end());
  const V sliding(m.block_table(1, 1).begin(), m.block_table(1, 1).end());
  // Its given-back sliding blocks 0-3 are evicted by a sequence taking every free block.
  ASSERT_TRUE(m.allocate(2, 4 * 16));
  m.free(2);
  const auto b = cat(a, iota_tokens(100, 104));
  const CachedPrefix p = m.lookup_prefix(b);
  EXPECT_EQ(p.num_tokens, 24);  // a hit of 6 needs sliding blocks 4 and 5 only
  V want = full;
  want.insert(want.end(), {kNoBlock, kNoBlock, kNoBlock, kNoBlock, sliding[4], sliding[5]});
  EXPECT_EQ(p.blocks, want);
  ASSERT_TRUE(m.allocate(3, int32_t(b.size()), p));
  EXPECT_EQ(m.ref_count(sliding[5]), 2);
  EXPECT_EQ(m.block_table(3, 1)[3], kNoBlock);
  m.commit(3, b, int32_t(b.size()));
  expect_clean(m);
  EXPECT_EQ(m.stats().fresh.hits, 24);
}

TEST(SlidingWindow, AHitShrinksToWhereTheWindowsBlocksAreCached) {
  BlockManager m = two_groups(40);
  const auto a = iota_tokens(0, 24);
  ASSERT_TRUE(m.allocate(1, 24));
  const V sliding(m.block_table(1, 1).begin(), m.block_table(1, 1).end());  // before the commit gives 0-3 back
  m.commit(1, a, 24);
  m.free(1);
  // Evict sliding blocks 4 and 5 only: the next allocation takes them.
  Peer::move_to_front(m, sliding[5]);
  Peer::move_to_front(m, sliding[4]);
  ASSERT_TRUE(m.allocate(2, 4));
  expect_clean(m);
  // 6 needs sliding 4-5, 5 needs 3-4: 4 needs 2-3, which are cached.
  const CachedPrefix p = m.lookup_prefix(cat(a, {1}));
  EXPECT_EQ(p.num_tokens, 16);
  EXPECT_EQ(p.blocks[4 + 2], sliding[2]);
  EXPECT_EQ(p.blocks[4 + 3], sliding[3]);
  EXPECT_EQ(p.blocks[4 + 0], kNoBlock);
  ASSERT_TRUE(m.allocate(3, 25, p));
  expect_clean(m);
}

TEST(SlidingWindow, AFullGroupBesideTheAnchorNeedsEveryBlock) {
  BlockManagerConfig c;
  c.num_blocks = 40;
  c.block_size = 4;
  c.group_windows = {0, 0, 8};
  BlockManager m(c);
  const auto a = iota_tokens(0, 24);
  admit(m, 1, a);
  const V second(m.block_table(1, 1).begin(), m.block_table(1, 1).end());
  m.free(1);
  Peer::move_to_front(m, second[2]);
  ASSERT_TRUE(m.allocate(2, 4));  // evicts group 1's block 2 (and two blocks never used)
  EXPECT_EQ(m.lookup_prefix(cat(a, {1})).num_tokens, 8);
  expect_clean(m);
}

TEST(SlidingWindow, ForkSharesEveryGroupAndCopiesOnWritePerGroup) {
  BlockManager m = two_groups(40);
  const auto a = iota_tokens(0, 22);
  admit(m, 1, a);
  ASSERT_TRUE(m.fork(1, 2));
  EXPECT_EQ(m.block_table(2, 1)[0], kNoBlock);
  EXPECT_EQ(m.ref_count(m.block_table(1, 1)[5]), 2);
  expect_clean(m);
  const AllocResult r = m.allocate(2, 23);  // writes into shared partial block 5 of both groups
  ASSERT_TRUE(r);
  ASSERT_EQ(r.copies.size(), 2u);
  EXPECT_EQ(r.copies[0].src, m.block_table(1, 0)[5]);
  EXPECT_EQ(r.copies[1].src, m.block_table(1, 1)[5]);
  EXPECT_EQ(m.block_table(2, 1)[5], r.copies[1].dst);
  expect_clean(m);
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.num_free_blocks(), 40);
  expect_clean(m);
}

TEST(SlidingWindow, KvEventsSpeakForTheAnchorGroup) {
  BlockManager m = two_groups(40);
  m.record_events(true);
  admit(m, 1, iota_tokens(0, 12));
  const auto events = m.take_events();
  ASSERT_EQ(events.size(), 3u);  // one per full block, not one per group
  EXPECT_EQ(m.cached_hashes().size(), 3u);
  EXPECT_EQ(m.stats().hashed_blocks, 6);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(events[i].hash, *m.block_hash(m.block_table(1, 0)[i]));
}

TEST(SlidingWindow, ReserveModeKeepsEveryBlock) {
  BlockManager m = two_groups(40, true, AllocPolicy::kReserve);
  EXPECT_EQ(m.window(1), 0);
  const auto a = iota_tokens(0, 20);
  const CachedPrefix p = m.lookup_prefix(a);
  ASSERT_TRUE(m.allocate(1, 20, p, 30));
  m.commit(1, a, 20);
  EXPECT_EQ(held(m, 1, 1), 8);
  EXPECT_EQ(m.blocks_to_grow(20, 30), 0);
  expect_clean(m);
}

TEST(SlidingWindow, CapacityFigures) {
  BlockManager m = two_groups(40);
  // From 20 to 40 computed tokens: 5 more full blocks, the window's count unchanged.
  EXPECT_EQ(m.blocks_to_grow(20, 40), 5);
  EXPECT_EQ(m.blocks_to_grow(0, 20), 5 + 2);
  EXPECT_EQ(m.growth_blocks(4), 4 + 1);
  // Alone, 8-token steps: ceil(L/4) + min(ceil(L/4), 5) <= 40.
  EXPECT_EQ(m.max_sequence_tokens(8), 35 * 4);
  BlockManagerConfig one;
  one.num_blocks = 40;
  one.block_size = 4;
  EXPECT_EQ(BlockManager(one).max_sequence_tokens(8), 160);
  EXPECT_EQ(BlockManager(one).growth_blocks(4), 4);
}

TEST(SlidingWindow, AStalePrefixIsRefused) {
  BlockManager m = two_groups(40);
  const auto a = iota_tokens(0, 24);
  admit(m, 1, a);
  CachedPrefix p = m.lookup_prefix(cat(a, {1}));
  ASSERT_EQ(p.num_tokens, 24);
  CachedPrefix bad = p;
  bad.blocks[6] = m.block_table(1, 1)[5];  // a sliding block where its window does not reach
  EXPECT_THROW((void)m.allocate(2, 25, bad), InvalidArgument);
  bad = p;
  bad.blocks.pop_back();
  EXPECT_THROW((void)m.allocate(2, 25, bad), InvalidArgument);
  bad = p;
  std::swap(bad.blocks[10], bad.blocks[11]);
  EXPECT_THROW((void)m.allocate(2, 25, bad), InvalidArgument);
  EXPECT_FALSE(m.contains(2));
  expect_clean(m);
}

void expect_window_violation(BlockManager& m, Invariant want) {
  auto v = m.audit();
  ASSERT_TRUE(v.has_value()) << "audit() missed a broken '" << invariant_name(want) << "'";
  EXPECT_EQ(v->invariant, want) << "reported '" << invariant_name(v->invariant) << "': " << v->message;
}

BlockManager windowed_pool(bool caching = true) {
  BlockManager m = two_groups(40, caching);
  admit(m, 1, iota_tokens(0, 20));
  admit(m, 2, iota_tokens(100, 110));
  EXPECT_FALSE(m.audit().has_value());
  return m;
}

TEST(SlidingWindowAudit, NamesABlockKeptBehindTheWindow) {
  BlockManager m = windowed_pool();
  Peer::refill_behind_window(m, 1, 1, 0);
  expect_window_violation(m, Invariant::kWindow);
}

TEST(SlidingWindowAudit, NamesAFullGroupLackingABlock) {
  BlockManager m = windowed_pool();
  Peer::drop_entry(m, 1, 0, 1);
  expect_window_violation(m, Invariant::kWindow);
}

TEST(SlidingWindowAudit, NamesASlidingGroupLackingABlockInItsWindow) {
  BlockManager m = windowed_pool();
  Peer::drop_entry(m, 1, 1, 4);
  expect_window_violation(m, Invariant::kWindow);
}

TEST(SlidingWindowAudit, NamesABlockInTwoGroupsTables) {
  BlockManager m = windowed_pool();
  Peer::share_across_groups(m, 2, 0, 1, 2);
  expect_window_violation(m, Invariant::kTableEntries);
}

TEST(SlidingWindowAudit, NamesAReplacedSlidingEntry) {
  BlockManager m = windowed_pool(false);  // nothing hashed: the new block breaks growth alone
  Peer::replace_entry(m, 1, 4, 1);
  expect_window_violation(m, Invariant::kGrowOnly);
}

}  // namespace
}  // namespace pagoda
