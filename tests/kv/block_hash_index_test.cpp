// The prefix cache's hash index (vLLM test_block_lookup_cache_*_per_key),
// plus a randomized comparison with std::multimap under heavy collisions.
#include "kv/block_hash_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

std::vector<BlockId> blocks_under(const BlockHashIndex& index, BlockHash h) {
  std::vector<BlockId> v;
  index.for_each(h, [&](BlockId b) { v.push_back(b); });
  std::sort(v.begin(), v.end());
  return v;
}

using V = std::vector<BlockId>;

TEST(BlockHashIndex, SingleBlockPerKey) {  // test_block_lookup_cache_single_block_per_key
  BlockHashIndex index(4);
  EXPECT_EQ(blocks_under(index, 10), V{});
  index.insert(10, 0);
  index.insert(11, 1);
  EXPECT_EQ(blocks_under(index, 10), V{0});
  EXPECT_EQ(blocks_under(index, 11), V{1});
  EXPECT_EQ(blocks_under(index, 12), V{});
  EXPECT_FALSE(index.erase(10, 100));  // block id mismatch: nothing erased
  EXPECT_EQ(blocks_under(index, 10), V{0});
  EXPECT_TRUE(index.erase(10, 0));
  EXPECT_EQ(blocks_under(index, 10), V{});
  EXPECT_FALSE(index.erase(10, 1));
  EXPECT_EQ(blocks_under(index, 11), V{1});
  EXPECT_TRUE(index.erase(11, 1));
  EXPECT_EQ(index.size(), 0u);
}

TEST(BlockHashIndex, SeveralBlocksPerKey) {  // test_block_lookup_cache_multi_blocks_per_key
  BlockHashIndex index(4);
  index.insert(0, 0);
  index.insert(0, 1);
  index.insert(1, 10);
  index.insert(1, 11);
  EXPECT_EQ(blocks_under(index, 0), (V{0, 1}));
  EXPECT_EQ(index.count(0, 1), 1);
  EXPECT_TRUE(index.erase(0, 0));
  EXPECT_EQ(blocks_under(index, 0), V{1});
  EXPECT_TRUE(index.erase(0, 1));
  EXPECT_FALSE(index.erase(0, 2));
  EXPECT_EQ(blocks_under(index, 1), (V{10, 11}));
  EXPECT_EQ(index.size(), 2u);
}

TEST(BlockHashIndex, RefusesToOverfill) {
  BlockHashIndex index(4);  // 8 slots, at most half used
  for (BlockId b = 0; b < 4; ++b) index.insert(7, b);
  EXPECT_THROW(index.insert(7, 4), Error);
  EXPECT_EQ(blocks_under(index, 7), (V{0, 1, 2, 3}));
}

TEST(BlockHashIndex, MatchesAMultimapUnderCollisions) {
  // Hashes drawn from 6 values: long clusters that wrap around the table,
  // exercising backward-shift deletion.
  std::mt19937_64 rng(7);
  BlockHashIndex index(64);
  std::multimap<BlockHash, BlockId> model;
  std::vector<std::pair<BlockHash, BlockId>> present;
  BlockId next = 0;
  for (int op = 0; op < 20000; ++op) {
    const bool insert = present.empty() || (present.size() < 64 && rng() % 2);
    if (insert) {
      BlockHash h = rng() % 6;
      if (h == 5) h = ~BlockHash{0} - rng() % 3;  // homes near the table's end
      index.insert(h, next);
      model.emplace(h, next);
      present.emplace_back(h, next++);
    } else {
      const size_t i = rng() % present.size();
      const BlockHash h = present[i].first;
      const BlockId b = present[i].second;
      ASSERT_TRUE(index.erase(h, b));
      auto [lo, hi] = model.equal_range(h);
      model.erase(std::find_if(lo, hi, [&](const auto& e) { return e.second == b; }));
      present[i] = present.back();
      present.pop_back();
    }
    ASSERT_EQ(index.size(), model.size());
    if (op % 50 == 0) {
      for (auto [h, b] : present) ASSERT_EQ(index.count(h, b), 1) << "op " << op;
      size_t entries = 0;
      index.for_each_entry([&](BlockHash, BlockId) { ++entries; });
      ASSERT_EQ(entries, model.size());
    }
  }
}

}  // namespace
}  // namespace pagoda
