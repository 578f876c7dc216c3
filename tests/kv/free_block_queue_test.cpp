// The free block queue: ports of vLLM's test_free_kv_cache_block_queue_* tests.
#include "kv/free_block_queue.h"

#include <gtest/gtest.h>

#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

using V = std::vector<BlockId>;

// A queue of `n` blocks holding `order` (the rest popped and not returned).
FreeBlockQueue queue_with(int32_t n, const V& order) {
  FreeBlockQueue q(n);
  while (!q.empty()) q.pop_front();
  for (BlockId b : order) q.push_back(b);
  return q;
}

void expect_well_formed(const FreeBlockQueue& q) {
  std::vector<uint8_t> member;
  int32_t walked = 0;
  auto broken = q.check(member, walked);
  EXPECT_FALSE(broken.has_value()) << *broken;
  EXPECT_EQ(walked, q.size());
}

TEST(FreeBlockQueue, Initialization) {  // test_free_kv_cache_block_queue_initialization
  FreeBlockQueue q(1);
  EXPECT_EQ(q.size(), 1);
  EXPECT_EQ(q.front(), 0);
  EXPECT_EQ(q.to_vector(), V{0});
  FreeBlockQueue empty(0);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.to_vector(), V{});
  expect_well_formed(q);
  expect_well_formed(empty);
}

TEST(FreeBlockQueue, Operations) {  // test_free_kv_cache_block_queue_operations
  FreeBlockQueue q(5);
  EXPECT_EQ(q.size(), 5);
  EXPECT_EQ(q.to_vector(), (V{0, 1, 2, 3, 4}));

  EXPECT_EQ(q.pop_front(), 0);
  EXPECT_EQ(q.size(), 4);
  EXPECT_EQ(q.front(), 1);

  q.remove(2);  // from the middle
  EXPECT_EQ(q.size(), 3);
  EXPECT_FALSE(q.contains(2));
  EXPECT_EQ(q.to_vector(), (V{1, 3, 4}));

  q.push_back(2);
  EXPECT_EQ(q.size(), 4);
  EXPECT_EQ(q.to_vector(), (V{1, 3, 4, 2}));
  expect_well_formed(q);

  for (int i = 0; i < 4; ++i) q.pop_front();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.to_vector(), V{});
  expect_well_formed(q);
  EXPECT_THROW(q.pop_front(), Error);  // popping an empty queue is an error
  EXPECT_THROW(q.front(), Error);
}

TEST(FreeBlockQueue, MisuseIsAnError) {
  FreeBlockQueue q(3);
  EXPECT_THROW(q.push_back(1), Error);  // already in the queue
  EXPECT_THROW(q.push_front(1), Error);
  EXPECT_THROW(q.push_back(3), Error);  // outside the pool
  EXPECT_THROW(q.remove(-1), Error);
  q.remove(1);
  EXPECT_THROW(q.remove(1), Error);  // not in the queue any more
  EXPECT_EQ(q.to_vector(), (V{0, 2}));
  expect_well_formed(q);
}

TEST(FreeBlockQueue, AppendKeepsOrder) {  // test_free_kv_cache_block_queue_append_n
  FreeBlockQueue q = queue_with(6, {});
  EXPECT_TRUE(q.empty());
  q.push_back(0);
  EXPECT_EQ(q.to_vector(), V{0});
  for (BlockId b : {4, 5}) q.push_back(b);
  EXPECT_EQ(q.to_vector(), (V{0, 4, 5}));
  for (BlockId b : {1, 2, 3}) q.push_back(b);
  EXPECT_EQ(q.to_vector(), (V{0, 4, 5, 1, 2, 3}));
  EXPECT_EQ(q.size(), 6);
  expect_well_formed(q);
}

TEST(FreeBlockQueue, PrependPutsBlocksAtTheHead) {  // test_free_kv_cache_block_queue_prepend_n
  FreeBlockQueue q = queue_with(6, {0});
  // Pushing 5 then 4 to the front leaves them in the order 4, 5.
  q.push_front(5);
  q.push_front(4);
  EXPECT_EQ(q.to_vector(), (V{4, 5, 0}));
  q.push_front(2);
  q.push_front(1);
  EXPECT_EQ(q.to_vector(), (V{1, 2, 4, 5, 0}));
  V popped;
  while (!q.empty()) popped.push_back(q.pop_front());
  EXPECT_EQ(popped, (V{1, 2, 4, 5, 0}));
}

TEST(FreeBlockQueue, PopManyInQueueOrder) {  // test_free_kv_cache_block_queue_popleft_n
  FreeBlockQueue q = queue_with(6, {1, 3, 5, 4, 0, 2});
  EXPECT_EQ(q.size(), 6);
  EXPECT_EQ(q.pop_front(), 1);
  EXPECT_EQ(q.size(), 5);
  EXPECT_EQ(q.pop_front(), 3);
  EXPECT_EQ(q.pop_front(), 5);
  EXPECT_EQ(q.size(), 3);
  EXPECT_FALSE(q.contains(1));
  EXPECT_FALSE(q.contains(3));
  EXPECT_EQ(q.pop_front(), 4);
  EXPECT_EQ(q.pop_front(), 0);
  EXPECT_EQ(q.pop_front(), 2);
  EXPECT_TRUE(q.empty());
  expect_well_formed(q);
}

TEST(FreeBlockQueue, ToVector) {  // test_free_kv_cache_block_queue_get_all_free_blocks
  FreeBlockQueue q(5);
  EXPECT_EQ(q.to_vector(), (V{0, 1, 2, 3, 4}));
  q.pop_front();
  EXPECT_EQ(q.to_vector(), (V{1, 2, 3, 4}));
  q.remove(2);
  EXPECT_EQ(q.to_vector(), (V{1, 3, 4}));
  q.push_back(2);
  EXPECT_EQ(q.to_vector(), (V{1, 3, 4, 2}));
}

TEST(FreeBlockQueue, RemoveHeadAndTail) {
  FreeBlockQueue q(4);
  q.remove(0);
  q.remove(3);
  EXPECT_EQ(q.to_vector(), (V{1, 2}));
  q.push_front(3);
  q.push_back(0);
  EXPECT_EQ(q.to_vector(), (V{3, 1, 2, 0}));
  expect_well_formed(q);
}

}  // namespace
}  // namespace pagoda
