// Recurrent-state slots in the block manager: taken with a new sequence's
// blocks all or nothing, given back by free(), copied by fork(), flipped by
// commit(), and audited.
#include <gtest/gtest.h>

#include "kv/block_manager.h"
#include "kv_test_util.h"
#include "test_peer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace kvtest;
using Peer = BlockManagerTestPeer;

BlockManagerConfig stateful(int32_t blocks, int32_t slots, AllocPolicy policy = AllocPolicy::kPaged) {
  BlockManagerConfig c;
  c.num_blocks = blocks;
  c.block_size = 4;
  c.prefix_caching = false;
  c.policy = policy;
  c.num_state_slots = slots;
  return c;
}

TEST(StateSlots, RefusesPrefixCachingAndBadCounts) {
  BlockManagerConfig c = stateful(8, 2);
  c.prefix_caching = true;
  EXPECT_THROW(BlockManager{c}, InvalidArgument);
  EXPECT_THROW(BlockManager{stateful(8, -1)}, InvalidArgument);
}

TEST(StateSlots, NoneWithoutState) {
  BlockManagerConfig c = stateful(8, 0);
  BlockManager m(c);
  EXPECT_EQ(m.slots_needed(1), 0);
  admit(m, 1, iota_tokens(0, 5));
  EXPECT_EQ(m.state_slot(1), kNoSlot);
  EXPECT_EQ(m.state_io(1).in, kNoState);
  EXPECT_EQ(m.state_io(1).out, kNoState);
  EXPECT_EQ(m.stats().state_slots, 0);
  expect_clean(m);
}

TEST(StateSlots, TakenWithBlocksAndGivenBackByFree) {
  BlockManager m(stateful(8, 2));
  EXPECT_EQ(m.slots_needed(1), 1);
  ASSERT_TRUE(m.allocate(1, 5));
  EXPECT_EQ(m.slots_needed(1), 0);  // a running sequence never needs another
  EXPECT_EQ(m.num_free_slots(), 1);
  EXPECT_EQ(m.stats().state_slots_used, 1);
  EXPECT_NE(m.state_slot(1), kNoSlot);
  expect_clean(m);
  m.free(1);
  EXPECT_EQ(m.num_free_slots(), 2);
  EXPECT_EQ(m.stats().state_slots_used, 0);
  m.free(1);  // idempotent
  EXPECT_EQ(m.num_free_slots(), 2);
  expect_clean(m);
}

TEST(StateSlots, AllOrNothingWithBlocks) {
  BlockManager m(stateful(8, 1));
  ASSERT_TRUE(m.allocate(1, 4));
  // Blocks to spare, no slot: nothing is taken.
  AllocResult r = m.allocate(2, 4);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_slots, 1);
  EXPECT_EQ(r.missing_blocks, 0);
  EXPECT_FALSE(m.contains(2));
  EXPECT_EQ(m.num_free_blocks(), 7);
  m.free(1);
  // A slot to spare, too few blocks: the slot stays free.
  r = m.allocate(2, 40);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_blocks, 2);
  EXPECT_EQ(r.missing_slots, 0);
  EXPECT_EQ(m.num_free_slots(), 1);
  // Both short: both named.
  ASSERT_TRUE(m.allocate(3, 4));
  r = m.allocate(2, 40);
  EXPECT_EQ(r.missing_blocks, 3);
  EXPECT_EQ(r.missing_slots, 1);
  expect_clean(m);
}

TEST(StateSlots, CommitFlipsTheBufferOnlyWhenTokensAreComputed) {
  BlockManager m(stateful(8, 2));
  const auto tokens = iota_tokens(0, 9);
  ASSERT_TRUE(m.allocate(1, 4));
  const StateSlot s = m.state_slot(1);
  StateIo io = m.state_io(1);
  EXPECT_EQ(io.in, kNoState);  // the first pass starts from zeros
  EXPECT_EQ(io.out, state_buffer(s, 0));
  // A failed pass is not committed: the next try gets the same buffers.
  EXPECT_EQ(m.state_io(1).out, io.out);
  m.commit(1, tokens, 4);
  io = m.state_io(1);
  EXPECT_EQ(io.in, state_buffer(s, 0));
  EXPECT_EQ(io.out, state_buffer(s, 1));
  m.commit(1, tokens, 4);  // nothing new computed: no flip
  EXPECT_EQ(m.state_io(1).in, state_buffer(s, 0));
  ASSERT_TRUE(m.allocate(1, 5));
  m.commit(1, tokens, 5);
  io = m.state_io(1);
  EXPECT_EQ(io.in, state_buffer(s, 1));
  EXPECT_EQ(io.out, state_buffer(s, 0));
  expect_clean(m);
}

TEST(StateSlots, ResumingAfterFreeStartsFromZeros) {
  BlockManager m(stateful(8, 1));
  const auto tokens = iota_tokens(0, 6);
  ASSERT_TRUE(m.allocate(1, 6));
  m.commit(1, tokens, 6);
  m.free(1);  // preempted: recompute
  ASSERT_TRUE(m.allocate(1, 6));
  EXPECT_EQ(m.state_io(1).in, kNoState);
  expect_clean(m);
}

class StateSlotsFork : public ::testing::TestWithParam<AllocPolicy> {};

TEST_P(StateSlotsFork, ChildGetsItsOwnSlotAndACopy) {
  BlockManager m(stateful(12, 3, GetParam()));
  const auto tokens = iota_tokens(0, 6);
  ASSERT_TRUE(m.allocate(1, 6, {}, 10));
  m.commit(1, tokens, 6);
  const StateBuffer parent_state = m.state_io(1).in;
  AllocResult r = m.fork(1, 2);
  ASSERT_TRUE(r);
  ASSERT_EQ(r.state_copies.size(), 1u);
  EXPECT_EQ(r.state_copies[0].src, parent_state);
  EXPECT_NE(m.state_slot(2), m.state_slot(1));
  EXPECT_EQ(slot_of(r.state_copies[0].dst), m.state_slot(2));
  EXPECT_EQ(m.state_io(2).in, r.state_copies[0].dst);
  EXPECT_EQ(m.state_io(1).in, parent_state);  // the parent is untouched
  expect_clean(m);
  ASSERT_TRUE(m.fork(1, 3));
  // No slot left: the fork takes nothing, blocks included.
  const int32_t free_blocks = m.num_free_blocks();
  r = m.fork(1, 4);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.missing_slots, 1);
  EXPECT_FALSE(m.contains(4));
  EXPECT_EQ(m.num_free_blocks(), free_blocks);
  expect_clean(m);
  for (SeqId s : {1, 2, 3}) m.free(s);
  EXPECT_EQ(m.num_free_slots(), 3);
  EXPECT_EQ(m.num_free_blocks(), 12);
  expect_clean(m);
}

TEST_P(StateSlotsFork, BeforeAnyPassNothingIsCopied) {
  BlockManager m(stateful(12, 2, GetParam()));
  ASSERT_TRUE(m.allocate(1, 3, {}, 8));
  AllocResult r = m.fork(1, 2);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.state_copies.empty());
  EXPECT_EQ(m.state_io(2).in, kNoState);
  expect_clean(m);
}

INSTANTIATE_TEST_SUITE_P(Policies, StateSlotsFork, ::testing::Values(AllocPolicy::kPaged, AllocPolicy::kReserve));

// Two running sequences, 2 of 3 slots held, one committed.
BlockManager busy_stateful() {
  BlockManager m(stateful(8, 3));
  admit(m, 1, iota_tokens(0, 5));
  EXPECT_TRUE(m.allocate(2, 3));
  EXPECT_FALSE(m.audit().has_value());
  return m;
}

void expect_slot_violation(BlockManager& m) {
  auto v = m.audit();
  ASSERT_TRUE(v.has_value()) << "audit() missed a broken state slot";
  EXPECT_EQ(v->invariant, Invariant::kStateSlots) << invariant_name(v->invariant) << ": " << v->message;
  EXPECT_FALSE(v->message.empty());
}

TEST(StateSlotsAudit, NamesALeakedSlot) {
  BlockManager m = busy_stateful();
  Peer::leak_slot(m);
  expect_slot_violation(m);
}

TEST(StateSlotsAudit, NamesASlotHeldTwice) {
  BlockManager m = busy_stateful();
  Peer::share_slot(m, 1, 2);
  expect_slot_violation(m);
}

TEST(StateSlotsAudit, NamesAStateInAnotherSlot) {
  BlockManager m = busy_stateful();
  Peer::point_state_at(m, 1, state_buffer(m.state_slot(2), 1));
  expect_slot_violation(m);
}

TEST(StateSlotsAudit, NamesAStateBeforeAnyComputedToken) {
  BlockManager m = busy_stateful();
  Peer::point_state_at(m, 2, state_buffer(m.state_slot(2), 0));
  expect_slot_violation(m);
}

TEST(StateSlotsAudit, NamesAComputedSequenceWithoutState) {
  BlockManager m = busy_stateful();
  Peer::point_state_at(m, 1, kNoState);
  expect_slot_violation(m);
}

TEST(StateSlotsAudit, NamesABrokenFreeList) {
  BlockManager m = busy_stateful();
  Peer::list_free_slot_twice(m);
  expect_slot_violation(m);
}

}  // namespace
}  // namespace pagoda
