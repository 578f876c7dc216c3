// Ports of vLLM's tests/v1/core/test_prefix_caching.py to Pagoda's block
// manager (see docs/kv-vllm-test-map.md). vLLM reserves block 0 as a null
// block; Pagoda does not, so block ids here are vLLM's minus one. vLLM hashes
// full blocks inside allocate_slots; Pagoda hashes them in commit(), after the
// forward pass succeeded, so each port commits where vLLM allocates.
#include <gtest/gtest.h>

#include "kv/block_hash.h"
#include "kv/block_manager.h"
#include "kv_test_util.h"
#include "test_peer.h"

namespace pagoda {
namespace {

using namespace kvtest;
using V = std::vector<BlockId>;

BlockManager make(int32_t num_blocks, int32_t block_size, bool caching = true) {
  BlockManagerConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.prefix_caching = caching;
  return BlockManager(c);
}

TEST(PrefixCaching, Prefill) {  // test_prefill
  BlockManager m = make(10, 16);
  const auto common = block_runs(3, 16);  // 3 full blocks

  // Full miss; 3 full blocks and a partial one of 7 tokens.
  const auto req0 = cat(common, repeat(3, 7));
  CachedPrefix p0 = m.lookup_prefix(req0);
  EXPECT_TRUE(p0.blocks.empty());
  EXPECT_EQ(p0.num_tokens, 0);
  ASSERT_TRUE(m.allocate(0, 55, p0));
  EXPECT_EQ(table(m, 0), (V{0, 1, 2, 3}));
  m.commit(0, req0, 55);
  BlockHash parent = kRootBlockHash;
  for (BlockId b : {0, 1, 2}) {
    const BlockHash h = hash_block_tokens(parent, std::span(req0).subspan(size_t(b) * 16, 16), 0);
    EXPECT_EQ(m.block_hash(b), h) << "block " << b;
    EXPECT_EQ(m.ref_count(b), 1);
    parent = h;
  }
  EXPECT_FALSE(m.block_hash(3).has_value());  // the partial block is never hashed
  EXPECT_EQ(m.ref_count(3), 1);

  // Hit on the common prefix while its blocks are still in use.
  const auto req1 = cat(common, repeat(3, 5));
  CachedPrefix p1 = m.lookup_prefix(req1);
  EXPECT_EQ(p1.blocks, (V{0, 1, 2}));
  EXPECT_EQ(p1.num_tokens, 48);
  ASSERT_TRUE(m.allocate(1, 53, p1));
  EXPECT_EQ(table(m, 1), (V{0, 1, 2, 4}));
  for (BlockId b : {0, 1, 2}) EXPECT_EQ(m.ref_count(b), 2);
  EXPECT_EQ(m.num_free_blocks(), 5);
  m.commit(1, req1, 53);

  m.free(0);
  m.free(1);
  EXPECT_EQ(m.num_free_blocks(), 10);
  // Unhashed partial blocks (4 of req1, 3 of req0) at the head for immediate
  // reuse, then the never used ones, then the common prefix, last block first.
  EXPECT_EQ(m.free_queue(), (V{4, 3, 5, 6, 7, 8, 9, 2, 1, 0}));

  // Hit on the common prefix when its blocks are already free.
  const auto req2 = cat(common, repeat(3, 6));
  CachedPrefix p2 = m.lookup_prefix(req2);
  EXPECT_EQ(p2.blocks, (V{0, 1, 2}));
  ASSERT_TRUE(m.allocate(2, 54, p2));
  EXPECT_EQ(table(m, 2), (V{0, 1, 2, 4}));  // reuses partial block 4
  EXPECT_EQ(m.num_free_blocks(), 6);
  for (BlockId b : m.free_queue()) EXPECT_EQ(m.ref_count(b), 0);
  m.free(2);

  // Miss that evicts everything; the order of the ids is the eviction order.
  const auto req3 = repeat(99, 160);
  EXPECT_TRUE(m.lookup_prefix(req3).blocks.empty());
  ASSERT_TRUE(m.allocate(3, 160));
  EXPECT_EQ(table(m, 3), (V{4, 3, 5, 6, 7, 8, 9, 2, 1, 0}));
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_TRUE(m.free_queue().empty());
  EXPECT_EQ(m.stats().evictions, 3);
  expect_clean(m);
}

TEST(PrefixCaching, DuplicateBlocksWhenLookupIsSkipped) {  // test_prefill_plp
  // A request admitted without a lookup (vLLM: prompt logprobs) recomputes
  // cached blocks; the duplicates get the same hashes under other ids.
  BlockManager m = make(11, 16);
  const auto common = block_runs(3, 16);
  const auto req0 = cat(common, repeat(3, 7));
  admit(m, 0, req0);
  EXPECT_EQ(table(m, 0), (V{0, 1, 2, 3}));
  std::vector<std::optional<BlockHash>> hashes0;
  for (BlockId b : table(m, 0)) hashes0.push_back(m.block_hash(b));

  const auto req1 = cat(common, repeat(3, 5));
  EXPECT_EQ(m.lookup_prefix(req1).blocks, (V{0, 1, 2}));

  const auto req2 = cat(common, repeat(3, 6));
  ASSERT_TRUE(m.allocate(2, 54));  // no lookup: a full miss by choice
  m.commit(2, req2, 54);
  const V t2 = table(m, 2);
  EXPECT_EQ(t2, (V{4, 5, 6, 7}));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m.block_hash(t2[i]), hashes0[i]);
    EXPECT_EQ(m.ref_count(t2[i]), 1);
  }
  // Both copies stay cached: either chain serves a later lookup.
  EXPECT_EQ(m.stats().hashed_blocks, 6);
  m.free(0);
  ASSERT_TRUE(m.allocate(9, 16 * 7));  // evicts every free block of req0's chain
  EXPECT_EQ(m.lookup_prefix(req1).blocks, (V{4, 5, 6}));
  expect_clean(m);
}

TEST(PrefixCaching, Decode) {  // test_decode
  BlockManager m = make(10, 16);
  auto tokens = cat(block_runs(3, 16), repeat(3, 7));
  admit(m, 0, tokens);
  EXPECT_EQ(table(m, 0), (V{0, 1, 2, 3}));

  // Four decode tokens fit in the partial block: no new block.
  for (int i = 0; i < 4; ++i) tokens.push_back(8);
  AllocResult r = m.allocate(0, 59);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.copies.empty());
  EXPECT_EQ(table(m, 0).size(), 4u);
  m.commit(0, tokens, 59);
  EXPECT_FALSE(m.block_hash(table(m, 0).back()).has_value());

  // 5 tokens fill the partial block, 14 more need one new block.
  for (int i = 0; i < 19; ++i) tokens.push_back(7);
  ASSERT_TRUE(m.allocate(0, 78));
  const V t = table(m, 0);
  EXPECT_EQ(t.size(), 5u);
  m.commit(0, tokens, 78);
  EXPECT_TRUE(m.block_hash(t[3]).has_value());
  EXPECT_FALSE(m.block_hash(t[4]).has_value());
  expect_clean(m);
}

TEST(PrefixCaching, EvictionOrder) {  // test_evict
  BlockManager m = make(10, 16);
  admit(m, 0, iota_tokens(0, 5 * 16 + 7));  // 5 full + 1 partial
  EXPECT_EQ(table(m, 0).size(), 6u);
  admit(m, 1, iota_tokens(87, 87 + 3 * 16));  // 3 full blocks
  EXPECT_EQ(table(m, 1).size(), 3u);
  EXPECT_EQ(m.num_free_blocks(), 1);

  m.free(0);
  // The partial (unhashed) block at the head, the cached ones at the tail.
  EXPECT_EQ(m.free_queue(), (V{5, 9, 4, 3, 2, 1, 0}));
  m.free(1);
  EXPECT_EQ(m.free_queue(), (V{5, 9, 4, 3, 2, 1, 0, 8, 7, 6}));

  // Touch the first two blocks.
  const auto req2 = iota_tokens(0, 2 * 16 + 3);
  CachedPrefix p = m.lookup_prefix(req2);
  EXPECT_EQ(p.blocks, (V{0, 1}));
  EXPECT_EQ(p.num_tokens, 32);
  ASSERT_TRUE(m.allocate(2, 35, p));
  EXPECT_EQ(table(m, 2), (V{0, 1, 5}));
  EXPECT_EQ(m.num_free_blocks(), 7);
  expect_clean(m);
}

TEST(PrefixCaching, ReusedBlockLosesItsOldHash) {  // test_hash_block_correct_reuse
  BlockManager m = make(1, 16);
  admit(m, 0, iota_tokens(0, 16));
  ASSERT_TRUE(m.block_hash(0).has_value());
  m.free(0);

  // A partial block reuses the only block: its hash must be cleared.
  const auto partial = iota_tokens(0, 15);
  EXPECT_TRUE(m.lookup_prefix(partial).blocks.empty());
  ASSERT_TRUE(m.allocate(1, 15));
  EXPECT_EQ(table(m, 1), V{0});
  EXPECT_FALSE(m.block_hash(0).has_value());
  m.free(1);
  EXPECT_TRUE(m.lookup_prefix(iota_tokens(0, 17)).blocks.empty());  // no stale hit
  expect_clean(m);
}

TEST(PrefixCaching, ComputedBlocksNotEvicted) {  // test_computed_blocks_not_evicted
  BlockManager m = make(2, 16);
  admit(m, 0, iota_tokens(0, 16));
  EXPECT_EQ(table(m, 0), V{0});
  admit(m, 1, iota_tokens(16, 32));
  EXPECT_EQ(table(m, 1), V{1});
  m.free(0);
  m.free(1);

  // A hit on block 0 must evict block 1, not the block it is reusing.
  const auto req2 = iota_tokens(0, 32);
  CachedPrefix p = m.lookup_prefix(req2);
  EXPECT_EQ(p.blocks, V{0});
  EXPECT_EQ(p.num_tokens, 16);
  ASSERT_TRUE(m.allocate(2, 32, p));
  EXPECT_EQ(table(m, 2), (V{0, 1}));
  expect_clean(m);
}

TEST(PrefixCaching, Disabled) {  // test_basic_prefix_caching_disabled
  BlockManager m = make(4, 4, /*caching=*/false);
  admit(m, 1, iota_tokens(0, 10));  // 2 blocks and some more
  EXPECT_EQ(table(m, 1).size(), 3u);
  EXPECT_EQ(m.stats().hashed_blocks, 0);
  m.free(1);

  const auto req2 = iota_tokens(0, 16);  // shares a prefix, but no caching
  EXPECT_TRUE(m.lookup_prefix(req2).blocks.empty());
  ASSERT_TRUE(m.allocate(2, 16));
  EXPECT_EQ(table(m, 2).size(), 4u);

  // No block left for a new request.
  const auto req3 = iota_tokens(0, 4);
  EXPECT_TRUE(m.lookup_prefix(req3).blocks.empty());
  AllocResult r = m.allocate(3, 4);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 1);
  EXPECT_FALSE(m.contains(3));
  expect_clean(m);
}

TEST(PrefixCaching, CommitHashesNewFullBlocksOnly) {  // test_cache_blocks
  BlockManager m = make(5, 4);
  const auto tokens = iota_tokens(0, 14);  // blocks [0..3] [4..7] [8..11] [12 13]
  ASSERT_TRUE(m.allocate(0, 14));
  m.commit(0, tokens, 8);  // two full blocks from the start
  EXPECT_EQ(m.stats().hashed_blocks, 2);
  EXPECT_TRUE(m.block_hash(0) && m.block_hash(1));
  const BlockHash h0 = *m.block_hash(0);
  m.commit(0, tokens, 12);  // continues from block 2
  EXPECT_EQ(m.stats().hashed_blocks, 3);
  EXPECT_EQ(m.block_hash(0), h0);
  m.commit(0, tokens, 14);  // the partial block is never hashed
  EXPECT_EQ(m.stats().hashed_blocks, 3);
  expect_clean(m);
}

TEST(PrefixCaching, CacheKeySalting) {  // test_cache_key_salting
  BlockManager m = make(10, 16);
  const auto common = block_runs(3, 16);
  auto tokens = cat(common, repeat(3, 11));
  CachedPrefix p0 = m.lookup_prefix(tokens, "salt1");
  EXPECT_TRUE(p0.blocks.empty());
  ASSERT_TRUE(m.allocate(0, 59, p0));
  EXPECT_EQ(table(m, 0), (V{0, 1, 2, 3}));
  m.commit(0, tokens, 59);
  // Pagoda salts every block's hash (vLLM only the first; the chain carries it).
  const uint64_t salt = hash_extra_key("salt1");
  BlockHash h = kRootBlockHash;
  for (BlockId b : {0, 1, 2}) {
    h = hash_block_tokens(h, std::span(tokens).subspan(size_t(b) * 16, 16), salt);
    EXPECT_EQ(m.block_hash(b), h);
  }
  for (int i = 0; i < 5; ++i) tokens.push_back(8);  // decode fills block 3
  ASSERT_TRUE(m.allocate(0, 64));
  EXPECT_EQ(table(m, 0).size(), 4u);
  m.commit(0, tokens, 64);
  h = hash_block_tokens(h, std::span(tokens).subspan(48, 16), salt);
  EXPECT_EQ(m.block_hash(3), h);

  // Same salt: a 3-block hit. Another salt, or none: a miss.
  const auto req1 = cat(common, repeat(4, 11));
  EXPECT_EQ(m.lookup_prefix(req1, "salt1").blocks.size(), 3u);
  EXPECT_EQ(m.lookup_prefix(req1, "salt2").blocks.size(), 0u);
  EXPECT_EQ(m.lookup_prefix(req1).blocks.size(), 0u);
  expect_clean(m);
}

TEST(PrefixCaching, FailedAllocationLeavesComputedBlocksUntouched) {
  // test_prefill_not_enough_free_blocks_with_computed_blocks
  BlockManager m = make(10, 16);
  const auto common = block_runs(3, 16);
  admit(m, 0, common);
  const V part0 = table(m, 0);

  const auto req1 = cat(common, common);
  EXPECT_EQ(m.lookup_prefix(req1).blocks, part0);
  admit(m, 1, req1);
  const V part1 = table(m, 1);
  m.free(1);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(m.ref_count(part1[i]), i < 3 ? 1 : 0);

  admit(m, 2, repeat(7, 32));
  EXPECT_EQ(m.num_free_blocks(), 5);

  // 6 cached blocks (3 of them free) + 3 new ones: 6 > 5 free blocks.
  const auto req3 = cat(req1, common);
  CachedPrefix p3 = m.lookup_prefix(req3);
  EXPECT_EQ(p3.blocks, part1);
  EXPECT_EQ(p3.num_tokens, 96);
  const V queue_before = m.free_queue();
  const KvStats stats_before = m.stats();
  EXPECT_EQ(m.blocks_needed(3, 144, p3), 6);
  AllocResult r = m.allocate(3, 144, p3);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 1);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(m.ref_count(part1[i]), i < 3 ? 1 : 0);
  EXPECT_EQ(m.free_queue(), queue_before);
  EXPECT_EQ(m.stats().fresh.requests, stats_before.fresh.requests);  // not admitted: not counted
  EXPECT_FALSE(m.contains(3));
  expect_clean(m);
}

TEST(PrefixCaching, ResetPrefixCache) {  // test_reset_prefix_cache
  BlockManager m = make(10, 16);
  const auto common = block_runs(3, 16);
  admit(m, 0, cat(common, repeat(3, 7)));
  EXPECT_EQ(table(m, 0), (V{0, 1, 2, 3}));
  CachedPrefix p = admit(m, 1, cat(common, repeat(4, 7)));
  EXPECT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(table(m, 1), (V{0, 1, 2, 4}));

  EXPECT_FALSE(m.reset_prefix_cache());  // blocks in use
  EXPECT_EQ(m.stats().hashed_blocks, 3);

  m.free(0);
  m.free(1);
  EXPECT_TRUE(m.reset_prefix_cache());
  EXPECT_EQ(m.stats().hashed_blocks, 0);
  EXPECT_EQ(m.stats().cached_blocks, 0);
  for (BlockId b = 0; b < 10; ++b) EXPECT_FALSE(m.block_hash(b).has_value());
  EXPECT_TRUE(m.lookup_prefix(cat(common, repeat(4, 7))).blocks.empty());
  expect_clean(m);
}

TEST(PrefixCaching, StatsStayZeroWhenDisabled) {  // test_prefix_cache_stats_disabled
  BlockManager m = make(11, 16, /*caching=*/false);
  admit(m, 0, iota_tokens(0, 16));
  m.free(0);
  EXPECT_TRUE(m.reset_prefix_cache());
  const KvStats s = m.stats();
  EXPECT_EQ(s.fresh.requests, 0);
  EXPECT_EQ(s.fresh.queries, 0);
  EXPECT_EQ(s.resumed.queries, 0);
}

TEST(PrefixCaching, EvictingOneDuplicateKeepsTheOther) {  // test_maybe_evict_cached_block
  // Two blocks cached under one hash; evicting one leaves the other mapped.
  BlockManager m = make(4, 4);
  const auto prompt = iota_tokens(0, 5);  // one full block + 1 token
  ASSERT_TRUE(m.allocate(0, 5));
  ASSERT_TRUE(m.allocate(1, 5));  // computed concurrently: no lookup hit yet
  m.commit(0, prompt, 5);
  m.commit(1, prompt, 5);
  EXPECT_EQ(m.block_hash(0), m.block_hash(2));
  m.free(0);
  m.free(1);
  EXPECT_EQ(m.free_queue(), (V{3, 1, 0, 2}));
  ASSERT_TRUE(m.allocate(2, 8));  // takes 3 and 1, then evicts 0
  EXPECT_EQ(table(m, 2), (V{3, 1}));
  ASSERT_TRUE(m.allocate(2, 12));
  EXPECT_EQ(table(m, 2), (V{3, 1, 0}));
  EXPECT_FALSE(m.block_hash(0).has_value());
  EXPECT_EQ(m.lookup_prefix(prompt).blocks, V{2});  // the other copy still hits
  expect_clean(m);
}

TEST(PrefixCaching, FullPromptHitStillComputesTheLastToken) {
  // test_eagle_identical_prompt_hits_last_safe_block, without EAGLE: an
  // identical prompt of whole blocks reuses all but the block of its last token.
  BlockManager m = make(10, 16);
  const auto prompt = repeat(0, 48);
  admit(m, 0, prompt);
  m.free(0);
  CachedPrefix p = m.lookup_prefix(prompt);
  EXPECT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.num_tokens, 32);
  EXPECT_EQ(m.lookup_prefix(cat(prompt, {1})).blocks.size(), 3u);
  EXPECT_TRUE(m.lookup_prefix(std::vector<TokenId>{}).blocks.empty());
}

TEST(PrefixCaching, CollidingHashesNeverServeAnotherPromptsKv) {
  // Every hash is 0: all blocks collide. Only the full key decides a hit.
  BlockManagerConfig c;
  c.num_blocks = 16;
  c.block_size = 4;
  c.hash_mask = 0;
  BlockManager m(c);
  const auto a = iota_tokens(0, 9);                              // [0..3] [4..7] 8
  const auto b = cat(iota_tokens(100, 104), iota_tokens(4, 9));  // other first block, same second
  admit(m, 0, a);
  EXPECT_TRUE(m.lookup_prefix(b).blocks.empty());
  admit(m, 1, b);
  EXPECT_EQ(m.block_hash(table(m, 0)[1]), m.block_hash(table(m, 1)[1]));  // same hash, same tokens
  m.free(0);
  m.free(1);
  // a's chain and b's chain share the second block's tokens and hash but not
  // its parent: each prompt gets its own blocks back.
  EXPECT_EQ(m.lookup_prefix(a).blocks, (V{0, 1}));
  EXPECT_EQ(m.lookup_prefix(b).blocks, (V{3, 4}));
  EXPECT_TRUE(m.lookup_prefix(a, "salt").blocks.empty());
  // LRU order never evicts a parent before its child, so force it: blocks 0,
  // 3 and 4 go first and 0 is recomputed with b's first tokens. a's second
  // block (1) still names block 0 as its parent, but an older generation of
  // it, so it must not extend b's new block 0 (its K/V follows a's tokens).
  for (BlockId blk : {4, 3, 0}) BlockManagerTestPeer::move_to_front(m, blk);
  ASSERT_TRUE(m.allocate(3, 12));
  EXPECT_EQ(table(m, 3), (V{0, 3, 4}));
  m.commit(3, cat(iota_tokens(100, 104), iota_tokens(50, 58)), 12);
  m.free(3);
  EXPECT_TRUE(m.block_hash(1).has_value());
  EXPECT_EQ(m.lookup_prefix(b).blocks, V{0});
  EXPECT_TRUE(m.lookup_prefix(a).blocks.empty());
  expect_clean(m);
}

}  // namespace
}  // namespace pagoda
