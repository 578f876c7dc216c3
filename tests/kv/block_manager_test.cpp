// Block manager behaviour beyond the vLLM ports: block-boundary growth,
// commit-only hashing, all-or-nothing allocation, fork and copy-on-write,
// free, boundary sizes, the reserve policy, counters and misuse.
#include "kv/block_manager.h"

#include <gtest/gtest.h>

#include "kv_test_util.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace kvtest;
using V = std::vector<BlockId>;

BlockManager make(int32_t num_blocks, int32_t block_size, AllocPolicy policy = AllocPolicy::kPaged,
                  bool caching = true) {
  BlockManagerConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.policy = policy;
  c.prefix_caching = caching;
  return BlockManager(c);
}

TEST(BlockManager, RejectsBadConfig) {
  BlockManagerConfig c;
  c.num_blocks = 0;
  EXPECT_THROW(BlockManager{c}, InvalidArgument);
  c.num_blocks = 4;
  c.block_size = 0;
  EXPECT_THROW(BlockManager{c}, InvalidArgument);
}

TEST(BlockManager, DecodeTakesABlockOnlyAtBoundaries) {
  BlockManager m = make(8, 4);
  std::vector<TokenId> tokens{1};
  ASSERT_TRUE(m.allocate(0, 1));
  m.commit(0, tokens, 1);
  for (int32_t n = 2; n <= 32; ++n) {
    const int32_t free_before = m.num_free_blocks();
    tokens.push_back(n);
    AllocResult r = m.allocate(0, n);
    ASSERT_TRUE(r) << n;
    EXPECT_TRUE(r.copies.empty());
    EXPECT_EQ(table(m, 0).size(), size_t((n + 3) / 4)) << n;
    EXPECT_EQ(free_before - m.num_free_blocks(), n % 4 == 1 ? 1 : 0) << "at " << n << " tokens";
    m.commit(0, tokens, n);
    // Only full blocks are hashed.
    const V t = table(m, 0);
    for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(m.block_hash(t[i]).has_value(), int32_t(i + 1) * 4 <= n);
    expect_clean(m);
  }
  EXPECT_FALSE(m.allocate(0, 33));  // a ninth block does not exist
}

TEST(BlockManager, HashingWaitsForCommit) {
  BlockManager m = make(8, 4);
  const auto prompt = iota_tokens(0, 9);
  ASSERT_TRUE(m.allocate(0, 9));
  for (BlockId b : table(m, 0)) EXPECT_FALSE(m.block_hash(b).has_value());
  EXPECT_TRUE(m.lookup_prefix(prompt).blocks.empty());
  m.commit(0, prompt, 4);  // a chunked prefill: only the first block is written
  EXPECT_EQ(m.lookup_prefix(prompt).blocks.size(), 1u);
  m.commit(0, prompt, 9);
  EXPECT_EQ(m.lookup_prefix(prompt).blocks.size(), 2u);
  expect_clean(m);
}

TEST(BlockManager, FailedStepIsNeverHashed) {
  BlockManager m = make(8, 4);
  const auto prompt = iota_tokens(0, 9);
  ASSERT_TRUE(m.allocate(0, 9));
  m.free(0);  // the forward pass failed: no commit, the engine frees the sequence
  EXPECT_EQ(m.stats().hashed_blocks, 0);
  EXPECT_TRUE(m.lookup_prefix(prompt).blocks.empty());
  // A decode step that fails: its block filled up but is not hashed.
  auto tokens = iota_tokens(0, 7);
  admit(m, 1, tokens);
  tokens.push_back(7);
  ASSERT_TRUE(m.allocate(1, 8));
  EXPECT_FALSE(m.block_hash(table(m, 1)[1]).has_value());
  m.free(1);
  EXPECT_EQ(m.lookup_prefix(cat(tokens, {8})).blocks.size(), 1u);
  expect_clean(m);
}

TEST(BlockManager, FailedAllocationChangesNothing) {
  BlockManager m = make(6, 4);
  admit(m, 0, iota_tokens(0, 9));  // 3 blocks, 2 hashed
  m.free(0);
  admit(m, 1, iota_tokens(50, 59));  // 3 more blocks: 3 stay free, 2 of them cached
  const V queue = m.free_queue();
  const KvStats before = m.stats();
  std::vector<int32_t> refs;
  for (BlockId b = 0; b < 6; ++b) refs.push_back(m.ref_count(b));

  // A new sequence: its cached prefix plus fresh blocks do not fit.
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 30));
  ASSERT_EQ(p.blocks.size(), 2u);
  AllocResult r = m.allocate(2, 30, p);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 8 - 3);  // needs 8 blocks, 3 are free
  // A running sequence that cannot grow.
  r = m.allocate(1, 30);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 5 - 3);

  EXPECT_FALSE(m.contains(2));
  EXPECT_EQ(m.num_tokens(1), 9);
  EXPECT_EQ(m.free_queue(), queue);
  for (BlockId b = 0; b < 6; ++b) EXPECT_EQ(m.ref_count(b), refs[size_t(b)]);
  EXPECT_EQ(m.stats().fresh.requests, before.fresh.requests);
  EXPECT_EQ(m.stats().evictions, before.evictions);
  expect_clean(m);
  // The prefix is still good to use once room is made.
  m.free(1);
  ASSERT_TRUE(m.allocate(2, 24, p));
  EXPECT_EQ(table(m, 2)[0], p.blocks[0]);
}

TEST(BlockManager, BlocksNeededMatchesAllocate) {
  BlockManager m = make(10, 4);
  admit(m, 0, iota_tokens(0, 13));
  m.free(0);
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 20));
  ASSERT_EQ(p.blocks.size(), 3u);
  // 5 blocks for 20 tokens: 3 cached (all free) + 2 fresh.
  EXPECT_EQ(m.blocks_needed(1, 20, p), 5);
  const int32_t free_before = m.num_free_blocks();
  ASSERT_TRUE(m.allocate(1, 20, p));
  EXPECT_EQ(free_before - m.num_free_blocks(), 5);
  EXPECT_EQ(m.blocks_needed(1, 21), 1);
  EXPECT_EQ(m.blocks_needed(1, 24), 1);
  EXPECT_EQ(m.blocks_needed(1, 20), 0);
  EXPECT_TRUE(m.can_allocate(m.blocks_needed(1, 24)));
}

TEST(BlockManager, AllocateRejectsAStalePrefix) {
  BlockManager m = make(3, 4);
  admit(m, 0, iota_tokens(0, 5));
  m.free(0);
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 6));
  ASSERT_EQ(p.blocks.size(), 1u);
  ASSERT_TRUE(m.allocate(1, 12));  // evicts the cached block behind p's back
  EXPECT_THROW((void)m.allocate(2, 6, p), InvalidArgument);
  EXPECT_FALSE(m.contains(2));
  expect_clean(m);
}

TEST(BlockManager, ForkSharesEveryBlock) {
  BlockManager m = make(8, 4);
  admit(m, 0, iota_tokens(0, 10));  // [full, full, partial]
  AllocResult r = m.fork(0, 1);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.copies.empty());
  EXPECT_EQ(table(m, 1), table(m, 0));
  for (BlockId b : table(m, 0)) EXPECT_EQ(m.ref_count(b), 2);
  EXPECT_EQ(m.num_tokens(1), 10);
  EXPECT_EQ(m.num_computed_tokens(1), 10);
  expect_clean(m);
  m.free(0);
  for (BlockId b : table(m, 1)) EXPECT_EQ(m.ref_count(b), 1);
  expect_clean(m);
  EXPECT_THROW((void)m.fork(7, 8), InvalidArgument);  // unknown parent
  EXPECT_THROW((void)m.fork(1, 1), InvalidArgument);  // child exists
}

TEST(BlockManager, CopyOnWriteReplacesTheSharedPartialBlock) {
  BlockManager m = make(8, 4);
  auto tokens = iota_tokens(0, 10);
  admit(m, 0, tokens);
  ASSERT_TRUE(m.fork(0, 1));
  const V shared = table(m, 0);
  expect_clean(m);  // records the tables for the grow-only check

  AllocResult r = m.allocate(1, 11);  // the child writes into the shared partial block
  ASSERT_TRUE(r);
  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_EQ(r.copies[0].src, shared[2]);
  const V child = table(m, 1);
  EXPECT_EQ(r.copies[0].dst, child[2]);
  EXPECT_EQ(child[0], shared[0]);
  EXPECT_EQ(child[1], shared[1]);
  EXPECT_NE(child[2], shared[2]);
  EXPECT_EQ(m.ref_count(shared[2]), 1);
  EXPECT_EQ(m.ref_count(shared[0]), 2);
  expect_clean(m);  // copy-on-write of the last entry is allowed

  r = m.allocate(0, 11);  // the parent now owns its partial block alone
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.copies.empty());
  EXPECT_EQ(table(m, 0), shared);

  // Forked at a block boundary: the next token opens a new block, no copy.
  ASSERT_TRUE(m.allocate(0, 12));
  ASSERT_TRUE(m.fork(0, 2));
  r = m.allocate(2, 13);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.copies.empty());
  EXPECT_EQ(table(m, 2).size(), 4u);
  expect_clean(m);
}

TEST(BlockManager, CopyOnWriteIsAllOrNothing) {
  BlockManager m = make(3, 4);
  admit(m, 0, iota_tokens(0, 6));  // 2 blocks
  ASSERT_TRUE(m.fork(0, 1));
  ASSERT_TRUE(m.allocate(2, 4));  // the last free block
  AllocResult r = m.allocate(1, 7);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 1);
  EXPECT_TRUE(r.copies.empty());
  EXPECT_EQ(table(m, 1), table(m, 0));
  EXPECT_EQ(m.num_tokens(1), 6);
  expect_clean(m);
}

TEST(BlockManager, FreeIsIdempotentAndReturnsLastBlockFirst) {
  BlockManager m = make(6, 4);
  admit(m, 0, iota_tokens(0, 12));  // three full blocks 0, 1, 2
  m.free(0);
  m.free(0);
  m.free(42);  // unknown: a no-op
  EXPECT_EQ(m.num_free_blocks(), 6);
  EXPECT_EQ(m.free_queue(), (V{3, 4, 5, 2, 1, 0}));
  // Eviction takes the prefix's later blocks first: block 0 survives longest.
  ASSERT_TRUE(m.allocate(1, 4 * 5));
  EXPECT_EQ(m.lookup_prefix(iota_tokens(0, 12)).blocks, V{0});
  expect_clean(m);
}

TEST(BlockManager, EveryOperationRejectsMisuse) {
  BlockManager m = make(4, 4);
  EXPECT_THROW((void)m.allocate(0, 0), InvalidArgument);
  EXPECT_THROW(m.block_table(0), InvalidArgument);
  EXPECT_THROW(m.commit(0, {}, 0), InvalidArgument);
  EXPECT_THROW(m.ref_count(4), InvalidArgument);
  admit(m, 0, iota_tokens(0, 6));
  EXPECT_THROW((void)m.allocate(0, 5), InvalidArgument);             // sequences do not shrink
  EXPECT_THROW(m.commit(0, iota_tokens(0, 7), 7), InvalidArgument);  // beyond what is allocated
  EXPECT_THROW(m.commit(0, iota_tokens(0, 6), 5), InvalidArgument);  // behind what is committed
  ASSERT_TRUE(m.allocate(0, 8));
  EXPECT_THROW(m.commit(0, iota_tokens(0, 7), 8), InvalidArgument);  // too few token ids
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 6));
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_THROW((void)m.allocate(0, 12, p), InvalidArgument);  // a prefix is for admission
  EXPECT_THROW((void)m.allocate(1, 4, p), InvalidArgument);   // nothing left to compute
  CachedPrefix bad = p;
  bad.num_tokens = 3;
  EXPECT_THROW((void)m.allocate(1, 6, bad), InvalidArgument);
  expect_clean(m);
}

TEST(BlockManager, CommitRejectsTokensThatDisagreeWithTheCache) {
  BlockManager m = make(4, 4);
  ASSERT_TRUE(m.allocate(0, 8));
  ASSERT_TRUE(m.fork(0, 1));  // forked before the step was committed
  m.commit(0, iota_tokens(0, 8), 8);
  // Block 0 is now cached with tokens 0..3; the child claims other tokens.
  EXPECT_THROW(m.commit(1, cat(iota_tokens(9, 13), iota_tokens(4, 8)), 8), InvalidArgument);
  m.commit(1, iota_tokens(0, 8), 8);  // the same tokens are fine
  expect_clean(m);
}

TEST(BlockManager, SaltedAdmissionWithoutLookup) {
  BlockManager m = make(8, 4);
  const auto prompt = iota_tokens(0, 9);
  CachedPrefix salted;
  salted.extra_key = "tenant-a";
  ASSERT_TRUE(m.allocate(0, 9, salted));
  m.commit(0, prompt, 9);
  m.free(0);
  EXPECT_EQ(m.lookup_prefix(prompt, "tenant-a").blocks.size(), 2u);
  EXPECT_TRUE(m.lookup_prefix(prompt).blocks.empty());
  EXPECT_TRUE(m.lookup_prefix(prompt, "tenant-b").blocks.empty());
  expect_clean(m);
}

TEST(BlockManager, BoundarySizes) {
  for (AllocPolicy policy : {AllocPolicy::kPaged, AllocPolicy::kReserve}) {
    SCOPED_TRACE(policy == AllocPolicy::kPaged ? "paged" : "reserve");
    const int32_t n = 8, bs = 4;
    BlockManager m = make(n, bs, policy);
    AllocResult r = m.allocate(0, n * bs + 1);  // N + 1 blocks
    EXPECT_FALSE(r);
    EXPECT_EQ(r.missing_blocks, 1);
    EXPECT_EQ(m.num_free_blocks(), n);
    ASSERT_TRUE(m.allocate(1, n * bs));  // exactly N blocks
    EXPECT_EQ(m.num_free_blocks(), 0);
    EXPECT_EQ(m.stats().usage, 1.0);
    expect_clean(m);
    m.free(1);
    ASSERT_TRUE(m.allocate(2, (n - 1) * bs));  // N - 1 blocks
    EXPECT_EQ(m.num_free_blocks(), 1);
    r = m.allocate(3, 2 * bs);
    EXPECT_FALSE(r);
    EXPECT_EQ(r.missing_blocks, 1);
    ASSERT_TRUE(m.allocate(3, bs));
    m.free(2);
    m.free(3);
    EXPECT_EQ(m.num_free_blocks(), n);
    expect_clean(m);
  }
}

TEST(BlockManager, BoundarySizesCountCachedPrefixBlocks) {
  // Exactly N blocks where some come from the cache (free, refcount 0).
  BlockManager m = make(8, 4);
  admit(m, 0, iota_tokens(0, 12));
  m.free(0);
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 33));
  ASSERT_EQ(p.blocks.size(), 3u);
  EXPECT_FALSE(m.allocate(1, 33, p));  // 9 blocks
  ASSERT_TRUE(m.allocate(1, 32, p));   // 8 blocks: 3 cached + 5 fresh
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_EQ(m.stats().evictions, 0);
  expect_clean(m);
}

TEST(BlockManager, ReservePolicyTakesTheWholeReservationAtAdmission) {
  BlockManager m = make(16, 4, AllocPolicy::kReserve);
  auto tokens = iota_tokens(0, 6);
  // prompt 6 + max_tokens 20 = 26 tokens: 7 blocks, all taken now.
  EXPECT_EQ(m.blocks_needed(0, 6, {}, 26), 7);
  ASSERT_TRUE(m.allocate(0, 6, {}, 26));
  EXPECT_EQ(table(m, 0).size(), 7u);
  EXPECT_EQ(m.num_free_blocks(), 9);
  m.commit(0, tokens, 6);
  expect_clean(m);
  const V reserved = table(m, 0);
  for (int32_t n = 7; n <= 26; ++n) {
    tokens.push_back(n);
    EXPECT_EQ(m.blocks_needed(0, n), 0);
    ASSERT_TRUE(m.allocate(0, n));
    m.commit(0, tokens, n);
    EXPECT_EQ(table(m, 0), reserved);
    EXPECT_EQ(m.num_free_blocks(), 9);
    expect_clean(m);
  }
  ASSERT_TRUE(m.allocate(0, 28));                          // the reservation's last block has room for 2 more
  EXPECT_THROW((void)m.allocate(0, 29), InvalidArgument);  // beyond the reservation
  m.free(0);
  EXPECT_EQ(m.num_free_blocks(), 16);
  // Its full blocks stay cached, like in paged mode.
  EXPECT_EQ(m.lookup_prefix(tokens).blocks.size(), 6u);
  expect_clean(m);
}

TEST(BlockManager, ReservePolicyNeverRunsOutMidGeneration) {
  BlockManager m = make(12, 4, AllocPolicy::kReserve);
  ASSERT_TRUE(m.allocate(0, 3, {}, 16));  // 4 blocks
  ASSERT_TRUE(m.allocate(1, 3, {}, 16));  // 4 blocks
  ASSERT_TRUE(m.allocate(2, 3, {}, 16));  // 4 blocks: the pool is full
  AllocResult r = m.allocate(3, 3, {}, 16);
  EXPECT_FALSE(r);  // admission is where it waits
  EXPECT_EQ(r.missing_blocks, 4);
  for (int32_t n = 4; n <= 16; ++n) {
    for (SeqId s = 0; s < 3; ++s) ASSERT_TRUE(m.allocate(s, n)) << "seq " << s << " at " << n;
  }
  expect_clean(m);
}

TEST(BlockManager, ReservePolicyForkCopiesThePartialBlock) {
  BlockManager m = make(16, 4, AllocPolicy::kReserve);
  const auto prompt = iota_tokens(0, 6);
  ASSERT_TRUE(m.allocate(0, 6, {}, 20));  // 5 blocks
  m.commit(0, prompt, 6);
  AllocResult r = m.fork(0, 1);
  ASSERT_TRUE(r);
  const V p = table(m, 0), c = table(m, 1);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0], p[0]);  // the full written block is shared
  for (size_t i = 1; i < 5; ++i) EXPECT_NE(c[i], p[i]);
  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_EQ(r.copies[0], (BlockCopy{p[1], c[1]}));  // the partial block, copied now
  EXPECT_EQ(m.ref_count(p[0]), 2);
  EXPECT_EQ(m.num_free_blocks(), 16 - 9);
  for (int32_t n = 7; n <= 20; ++n) {
    AllocResult g = m.allocate(1, n);
    ASSERT_TRUE(g);
    EXPECT_TRUE(g.copies.empty());  // never copy-on-write in reserve mode
  }
  expect_clean(m);
  ASSERT_TRUE(m.allocate(2, 1, {}, 28));  // 7 of the 7 free blocks
  r = m.fork(0, 3);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 4);
  EXPECT_FALSE(m.contains(3));
  expect_clean(m);
}

TEST(BlockManager, ReservePolicyReusesCachedPrefixes) {
  BlockManager m = make(16, 4, AllocPolicy::kReserve);
  const auto prompt = iota_tokens(0, 10);
  ASSERT_TRUE(m.allocate(0, 10, {}, 16));
  m.commit(0, prompt, 10);
  CachedPrefix p = m.lookup_prefix(prompt);
  ASSERT_EQ(p.blocks.size(), 2u);
  ASSERT_TRUE(m.allocate(1, 10, p, 16));
  const V t = table(m, 1);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], p.blocks[0]);
  EXPECT_EQ(t[1], p.blocks[1]);
  EXPECT_EQ(m.num_computed_tokens(1), 8);
  expect_clean(m);
}

TEST(BlockManager, PrefixStatsAreCountedOncePerAdmission) {
  BlockManager m = make(8, 4);
  admit(m, 0, iota_tokens(0, 9));
  KvStats s = m.stats();
  EXPECT_EQ(s.fresh.requests, 1);
  EXPECT_EQ(s.fresh.queries, 9);
  EXPECT_EQ(s.fresh.hits, 0);

  // Lookups alone count nothing; a failed admission counts nothing.
  const auto prompt = iota_tokens(0, 30);
  (void)m.lookup_prefix(prompt);
  CachedPrefix p = m.lookup_prefix(prompt);
  EXPECT_FALSE(m.allocate(1, 30, p));
  EXPECT_EQ(m.stats().fresh.requests, 1);
  ASSERT_TRUE(m.allocate(1, 12, m.lookup_prefix(iota_tokens(0, 12))));
  s = m.stats();
  EXPECT_EQ(s.fresh.requests, 2);
  EXPECT_EQ(s.fresh.queries, 9 + 12);
  EXPECT_EQ(s.fresh.hits, 8);

  // A preempted request resumes: counted apart.
  m.commit(1, iota_tokens(0, 12), 12);
  m.free(1);
  ASSERT_TRUE(m.allocate(1, 13, m.lookup_prefix(iota_tokens(0, 13), {}, Admission::kResumed)));
  s = m.stats();
  EXPECT_EQ(s.fresh.requests, 2);
  EXPECT_EQ(s.resumed.requests, 1);
  EXPECT_EQ(s.resumed.queries, 13);
  EXPECT_EQ(s.resumed.hits, 12);
}

TEST(BlockManager, StatsDescribeThePool) {
  BlockManager m = make(10, 4);
  admit(m, 0, iota_tokens(0, 10));   // 3 blocks, 2 hashed
  admit(m, 1, iota_tokens(20, 24));  // 1 full block, hashed
  KvStats s = m.stats();
  EXPECT_EQ(s.num_blocks, 10);
  EXPECT_EQ(s.used_blocks, 4);
  EXPECT_EQ(s.free_blocks, 6);
  EXPECT_EQ(s.cached_blocks, 0);
  EXPECT_EQ(s.hashed_blocks, 3);
  EXPECT_DOUBLE_EQ(s.usage, 0.4);
  m.free(0);
  s = m.stats();
  EXPECT_EQ(s.used_blocks, 1);
  EXPECT_EQ(s.cached_blocks, 2);
  EXPECT_EQ(s.hashed_blocks, 3);
  EXPECT_EQ(s.evictions, 0);
}

}  // namespace
}  // namespace pagoda
