// Block hashing and extra-key interning (vLLM test_kv_cache_utils: test_none_hash,
// test_hash_block_tokens, test_hash_request_tokens, extra-key salt tests).
#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "kv/extra_keys.h"
#include "util/error.h"

namespace pagoda {
namespace {

TEST(BlockHash, RootHashIsFixedAndNonZero) {  // test_none_hash
  EXPECT_NE(kRootBlockHash, 0u);
  const std::vector<TokenId> t{1, 2, 3};
  EXPECT_EQ(hash_block_tokens(kRootBlockHash, t, 0), hash_block_tokens(kRootBlockHash, t, 0));
}

TEST(BlockHash, DependsOnParentTokensAndExtraKey) {  // test_hash_block_tokens
  const std::vector<TokenId> t{1, 2, 3};
  const BlockHash h = hash_block_tokens(123, t, hash_extra_key("key"));
  EXPECT_NE(h, hash_block_tokens(124, t, hash_extra_key("key")));
  EXPECT_NE(h, hash_block_tokens(123, std::vector<TokenId>{1, 2, 4}, hash_extra_key("key")));
  EXPECT_NE(h, hash_block_tokens(123, std::vector<TokenId>{2, 1, 3}, hash_extra_key("key")));
  EXPECT_NE(h, hash_block_tokens(123, t, hash_extra_key("other")));
  EXPECT_NE(h, hash_block_tokens(123, t, 0));
  EXPECT_EQ(hash_extra_key(""), 0u);
  EXPECT_NE(hash_extra_key("a"), 0u);
  // Length is part of the hash: a trailing 0 token is not the same block.
  EXPECT_NE(hash_block_tokens(1, std::vector<TokenId>{5}, 0), hash_block_tokens(1, std::vector<TokenId>{5, 0}, 0));
}

TEST(BlockHash, NoCollisionsAmongManySmallBlocks) {
  // All 4-token blocks over a 12-symbol alphabet: 20736 distinct keys.
  std::set<BlockHash> seen;
  std::vector<TokenId> t(4);
  for (int i = 0; i < 12 * 12 * 12 * 12; ++i) {
    int x = i;
    for (auto& v : t) v = x % 12, x /= 12;
    seen.insert(hash_block_tokens(kRootBlockHash, t, 0));
  }
  EXPECT_EQ(seen.size(), 20736u);
}

TEST(BlockHash, ChainOverAPrompt) {  // test_hash_request_tokens / test_request_block_hasher
  // Equal blocks at different positions hash differently: the parent differs.
  const std::vector<TokenId> block{7, 7, 7};
  const BlockHash h0 = hash_block_tokens(kRootBlockHash, block, 0);
  const BlockHash h1 = hash_block_tokens(h0, block, 0);
  EXPECT_NE(h0, h1);
}

TEST(ExtraKeyTable, InternsAndRecyclesIds) {
  ExtraKeyTable t;
  EXPECT_EQ(t.acquire(""), 0u);
  EXPECT_EQ(t.find(""), 0u);
  EXPECT_FALSE(t.find("salt").has_value());
  const uint32_t a = t.acquire("salt");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(t.acquire("salt"), a);
  EXPECT_EQ(t.refs(a), 2);
  EXPECT_EQ(t.hash(a), hash_extra_key("salt"));
  EXPECT_EQ(t.find("salt"), a);
  t.release(a);
  t.release(a);
  EXPECT_FALSE(t.find("salt").has_value());  // gone with its last reference
  EXPECT_THROW(t.release(a), Error);
  const uint32_t b = t.acquire("pepper");
  EXPECT_EQ(b, a);  // the id is reused: one-off salts do not grow the table
  EXPECT_EQ(t.key(b), "pepper");
  EXPECT_EQ(t.capacity(), 2u);
}

}  // namespace
}  // namespace pagoda
