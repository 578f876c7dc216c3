// audit() is itself tested: for each invariant a test-only hook breaks exactly
// that one, and audit() must name it (and pass right before the hook).
#include <gtest/gtest.h>

#include "kv/block_manager.h"
#include "kv_test_util.h"
#include "test_peer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace kvtest;
using Peer = BlockManagerTestPeer;

// Sequences 0 (3 blocks, 10 tokens) and 1 (2 blocks) in a pool of 8 blocks of
// 4 tokens; 3 blocks stay free.
BlockManager busy_pool(bool caching) {
  BlockManagerConfig c;
  c.num_blocks = 8;
  c.block_size = 4;
  c.prefix_caching = caching;
  BlockManager m(c);
  admit(m, 0, iota_tokens(0, 10));
  admit(m, 1, iota_tokens(100, 106));
  EXPECT_FALSE(m.audit().has_value());
  return m;
}

void expect_violation(BlockManager& m, Invariant want) {
  auto v = m.audit();
  ASSERT_TRUE(v.has_value()) << "audit() missed a broken '" << invariant_name(want) << "'";
  EXPECT_EQ(v->invariant, want) << "reported '" << invariant_name(v->invariant) << "': " << v->message;
  EXPECT_FALSE(v->message.empty());
}

TEST(Audit, PassesThroughOrdinaryOperations) {
  BlockManager m = busy_pool(true);
  ASSERT_TRUE(m.fork(0, 2));
  expect_clean(m);
  ASSERT_TRUE(m.allocate(2, 11));  // copy-on-write
  expect_clean(m);
  m.free(0);
  expect_clean(m);
  m.free(1);
  m.free(2);
  expect_clean(m);
  EXPECT_TRUE(m.reset_prefix_cache());
  expect_clean(m);
  EXPECT_NO_THROW(m.check());
}

TEST(Audit, NamesADuplicateTableEntry) {
  BlockManager m = busy_pool(false);
  Peer::duplicate_first_entry(m, 0);
  expect_violation(m, Invariant::kTableEntries);
}

TEST(Audit, NamesAWrongRefcount) {
  BlockManager m = busy_pool(false);
  Peer::bump_refcount(m, table(m, 1)[0]);
  expect_violation(m, Invariant::kRefcount);
}

TEST(Audit, NamesAFreeQueueMembershipError) {
  BlockManager m = busy_pool(false);
  const BlockId free_block = m.free_queue().front();
  Peer::swap_into_free_queue(m, free_block, table(m, 0)[1]);
  expect_violation(m, Invariant::kFreeQueue);
}

TEST(Audit, NamesABrokenFreeQueueLink) {
  BlockManager m = busy_pool(false);
  Peer::corrupt_back_link(m, m.free_queue()[1]);
  expect_violation(m, Invariant::kFreeQueue);
}

TEST(Audit, NamesAWrongFreeCount) {
  BlockManager m = busy_pool(false);
  Peer::skew_free_count(m, 1);
  expect_violation(m, Invariant::kBlockCount);
}

TEST(Audit, NamesAWrongCachedCount) {
  BlockManager m = busy_pool(true);
  m.free(0);  // 2 cached free blocks
  ASSERT_EQ(m.stats().cached_blocks, 2);
  expect_clean(m);
  Peer::skew_cached_count(m, -1);
  expect_violation(m, Invariant::kBlockCount);
}

TEST(Audit, NamesATableThatDoesNotCoverItsTokens) {
  BlockManager m = busy_pool(false);
  Peer::claim_tokens(m, 1, 4);
  expect_violation(m, Invariant::kTableSize);
}

TEST(Audit, NamesAHashedBlockMissingFromTheMap) {
  BlockManager m = busy_pool(true);
  const BlockId b = table(m, 0)[0];
  ASSERT_TRUE(Peer::hashed(m, b));
  Peer::unmap(m, b);
  expect_violation(m, Invariant::kHash);
}

TEST(Audit, NamesAHashedPartialBlock) {
  BlockManager m = busy_pool(true);
  Peer::hash_partial_last_block(m, 0);
  expect_violation(m, Invariant::kHash);
  EXPECT_NE(m.audit()->message.find("not full"), std::string::npos);
}

TEST(Audit, NamesALeakedExtraKey) {
  BlockManagerConfig c;
  c.num_blocks = 8;
  c.block_size = 4;
  BlockManager m(c);
  admit(m, 0, iota_tokens(0, 10), "salt");
  expect_clean(m);
  Peer::leak_extra_key(m, 0);
  expect_violation(m, Invariant::kExtraKeys);
}

TEST(Audit, NamesATableEntryThatChanged) {
  BlockManager m = busy_pool(false);
  expect_clean(m);  // remembers the tables
  Peer::replace_entry(m, 0, 0);
  expect_violation(m, Invariant::kGrowOnly);
}

TEST(Audit, NamesALastEntryChangedWithoutCopyOnWrite) {
  BlockManager m = busy_pool(false);
  expect_clean(m);
  Peer::replace_entry(m, 0, 2);
  expect_violation(m, Invariant::kGrowOnly);
}

TEST(Audit, CheckThrowsNamingTheInvariant) {
  BlockManager m = busy_pool(false);
  Peer::bump_refcount(m, table(m, 0)[0]);
  try {
    m.check();
    FAIL() << "check() passed a broken refcount";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refcount"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pagoda
