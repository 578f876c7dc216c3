// Sizing the recurrent-state slots of a hybrid model (kv/pool_size.h): one
// slot per --max-num-seqs by default, capped at what the memory left holds,
// --state-slots N exactly, and a refusal naming the figures when they do not
// fit; prefix caching's state checkpoints, one a slot by default (a third
// buffer each), N, or none.
#include <gtest/gtest.h>

#include "kv/pool_size.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr int64_t kMiB = 1 << 20;

StatePoolOptions hybrid() {
  StatePoolOptions o;
  o.max_num_seqs = 8;
  o.state_bytes = 4 * kMiB;  // a slot: 8 MiB, and a 4 MiB checkpoint by default
  o.mem_left_bytes = 1024 * kMiB;
  o.mem_left_why = "left after the weights";
  return o;
}

TEST(StatePoolSize, NoneForAModelWithoutState) {
  StatePoolOptions o = hybrid();
  o.state_bytes = 0;
  o.state_slots = 5;
  const StatePoolSize s = size_state_pool(o);
  EXPECT_EQ(s.num_slots, 0);
  EXPECT_EQ(s.bytes, 0);
  EXPECT_TRUE(s.summary.empty());
  EXPECT_EQ(state_pool_needs_bytes(o), 0);
}

TEST(StatePoolSize, DefaultIsOneSlotPerSequenceOfTwoBuffersAndACheckpoint) {
  const StatePoolSize s = size_state_pool(hybrid());
  EXPECT_EQ(s.num_slots, 8);
  EXPECT_EQ(s.num_checkpoints, 8);
  EXPECT_EQ(s.bytes, 8 * 12 * kMiB);
  EXPECT_NE(s.summary.find("8 slots"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("8 prefix-cache checkpoints"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("--max-num-seqs 8"), std::string::npos) << s.summary;
  EXPECT_EQ(state_pool_needs_bytes(hybrid()), 8 * 12 * kMiB);
}

TEST(StatePoolSize, CheckpointsNoneOrAnExplicitCount) {
  StatePoolOptions o = hybrid();
  o.state_checkpoints = 0;  // --state-checkpoints 0 (or --no-prefix-caching)
  StatePoolSize s = size_state_pool(o);
  EXPECT_EQ(s.num_slots, 8);
  EXPECT_EQ(s.num_checkpoints, 0);
  EXPECT_EQ(s.bytes, 8 * 8 * kMiB);
  EXPECT_EQ(state_pool_needs_bytes(o), 8 * 8 * kMiB);
  o.state_checkpoints = 20;
  s = size_state_pool(o);
  EXPECT_EQ(s.num_checkpoints, 20);
  EXPECT_EQ(s.bytes, 8 * 8 * kMiB + 20 * 4 * kMiB);
  o.mem_left_bytes = 100 * kMiB;  // 90 MiB: 80 of checkpoints leave one slot
  EXPECT_EQ(size_state_pool(o).num_slots, 1);
  o.state_checkpoints = -2;
  EXPECT_THROW(size_state_pool(o), InvalidArgument);
}

TEST(StatePoolSize, DefaultIsCappedByTheMemoryLeft) {
  StatePoolOptions o = hybrid();
  o.mem_left_bytes = 40 * kMiB;  // 90%: 36 MiB, 3 slots of 12
  const StatePoolSize s = size_state_pool(o);
  EXPECT_EQ(s.num_slots, 3);
  EXPECT_NE(s.summary.find("capped"), std::string::npos) << s.summary;
}

TEST(StatePoolSize, NotEvenOneDefaultSlotIsRefusedWithTheFigures) {
  StatePoolOptions o = hybrid();
  o.mem_left_bytes = 8 * kMiB;  // 90% is less than one slot
  try {
    size_state_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("8.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("left after the weights"), std::string::npos) << m;
  }
}

TEST(StatePoolSize, AnExplicitCountIsExactOrRefused) {
  StatePoolOptions o = hybrid();
  o.state_slots = 20;
  EXPECT_EQ(size_state_pool(o).num_slots, 20);  // above --max-num-seqs is allowed
  EXPECT_EQ(state_pool_needs_bytes(o), 20 * 12 * kMiB);
  o.state_slots = 200;  // 2.3 GiB
  try {
    size_state_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("--state-slots 85"), std::string::npos) << e.what();
  }
  o.state_slots = -1;
  EXPECT_THROW(size_state_pool(o), InvalidArgument);
}

TEST(StatePoolSize, UnknownMemoryTakesTheCount) {
  StatePoolOptions o = hybrid();
  o.mem_left_bytes = -1;
  EXPECT_EQ(size_state_pool(o).num_slots, 8);
}

}  // namespace
}  // namespace pagoda
