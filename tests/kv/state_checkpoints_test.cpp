// Prefix caching for hybrid models: where a prompt's state is checkpointed,
// the bounded checkpoint cache, and the block manager saving at commit,
// stopping lookups at the deepest checkpoint, starting a sequence from it,
// and dropping a checkpoint with its block's hash; audit() names each breach.
#include <gtest/gtest.h>

#include "kv/block_manager.h"
#include "kv/state_checkpoints.h"
#include "kv_test_util.h"
#include "test_peer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using namespace kvtest;

TEST(CheckpointPoints, EveryIntervalAndTheLastBlockBoundaries) {
  const CheckpointPoints p{.interval = 8, .block_size = 4};
  // 21 tokens: 8, 16 and 20 (the last boundary before the last token).
  for (int32_t pos = 0; pos <= 24; ++pos) EXPECT_EQ(p.at(pos, 21), pos == 8 || pos == 16 || pos == 20) << pos;
  EXPECT_EQ(p.next(0, 21), 8);
  EXPECT_EQ(p.next(9, 21), 16);
  EXPECT_EQ(p.next(16, 21), 20);
  EXPECT_EQ(p.next(20, 21), 0);
  // 16 tokens: a repeat looks up 12, a longer prompt 16.
  for (int32_t pos = 0; pos <= 20; ++pos) EXPECT_EQ(p.at(pos, 16), pos == 8 || pos == 12 || pos == 16) << pos;
  EXPECT_EQ(p.next(8, 16), 12);
  EXPECT_EQ(p.next(12, 16), 16);
  // Shorter than a block: nowhere. No interval: nowhere.
  EXPECT_EQ(p.next(0, 3), 0);
  const CheckpointPoints none{.interval = 0, .block_size = 4};
  EXPECT_FALSE(none.at(8, 21));
  EXPECT_EQ(none.next(0, 21), 0);
}

TEST(StateCheckpointCache, EvictsTheLeastRecentlyUsed) {
  StateCheckpoints c(2, 10);
  EXPECT_EQ(c.add(5, 0), 10);
  EXPECT_EQ(c.add(6, 0), 11);
  EXPECT_EQ(c.add(6, 0), kNoState);  // one a block
  c.touch(5);                        // 6 is now the oldest
  EXPECT_EQ(c.add(7, 0), 11);
  EXPECT_EQ(c.find(6), kNoState);
  EXPECT_EQ(c.find(5), 10);
  EXPECT_EQ(c.find(7), 11);
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_EQ(c.hits(), 1);
  EXPECT_EQ(c.saves(), 3);
  c.drop(5);
  c.drop_buffer(11);
  EXPECT_EQ(c.size(), 0);
  EXPECT_FALSE(c.check().has_value());
  StateCheckpoints none(0, 4);
  EXPECT_EQ(none.add(1, 0), kNoState);
}

constexpr int32_t kBs = 4, kSlots = 2;

BlockManagerConfig hybrid(int32_t blocks, int32_t checkpoints) {
  BlockManagerConfig c;
  c.num_blocks = blocks;
  c.block_size = kBs;
  c.num_state_slots = kSlots;
  c.num_state_checkpoints = checkpoints;
  c.state_checkpoint_interval = 8;
  return c;
}

struct PromptRun {
  CachedPrefix prefix;
  std::vector<StateCopy> restores, saves;
};

// A prompt as the engine runs it: lookup, then chunks of up to 5 tokens cut
// at checkpoints, each committed and its saves taken; audit after each.
PromptRun run_prompt(BlockManager& m, SeqId seq, const std::vector<TokenId>& prompt) {
  PromptRun r;
  r.prefix = m.lookup_prefix(prompt);
  const int32_t n = int32_t(prompt.size());
  for (int32_t start = r.prefix.num_tokens; start < n;) {
    const int32_t step = m.cut_at_state_checkpoint(start, std::min(5, n - start), n);
    AllocResult a =
        start == r.prefix.num_tokens ? m.allocate(seq, start + step, r.prefix) : m.allocate(seq, start + step);
    EXPECT_TRUE(a.ok);
    r.restores.insert(r.restores.end(), a.state_copies.begin(), a.state_copies.end());
    start += step;
    m.commit(seq, prompt, start, m.state_checkpoint_at(start, n));
    for (const StateCopy& c : m.take_state_saves()) {
      EXPECT_EQ(c.src, m.state_io(seq).in) << "a save copies the committed state";
      r.saves.push_back(c);
    }
    expect_clean(m);
  }
  return r;
}

TEST(HybridPrefixCaching, RefusesWithoutCheckpointsOrOffBlockIntervals) {
  EXPECT_THROW(BlockManager{hybrid(16, 0)}, InvalidArgument);
  BlockManagerConfig c = hybrid(16, 2);
  c.state_checkpoint_interval = 6;
  EXPECT_THROW(BlockManager{c}, InvalidArgument);
  c = hybrid(16, 2);
  c.num_state_slots = 0;
  EXPECT_THROW(BlockManager{c}, InvalidArgument);
  c = hybrid(16, 2);
  c.prefix_caching = false;  // checkpoints unused: none kept
  BlockManager off(c);
  EXPECT_EQ(off.num_state_checkpoints(), 0);
}

TEST(HybridPrefixCaching, SavesAtCheckpointsAndStartsFromTheDeepest) {
  BlockManager m(hybrid(16, 2));
  const std::vector<TokenId> prompt = iota_tokens(0, 18);  // checkpoints at 8 and 16
  const PromptRun first = run_prompt(m, 1, prompt);
  EXPECT_EQ(first.prefix.num_tokens, 0);
  EXPECT_TRUE(first.restores.empty());
  ASSERT_EQ(first.saves.size(), 2u);
  EXPECT_EQ(first.saves[0].dst, 2 * kSlots);  // the checkpoint buffers follow the slots'
  EXPECT_EQ(first.saves[1].dst, 2 * kSlots + 1);
  m.free(1);

  // The same prompt: from the checkpoint at 16, copied into the slot's first buffer.
  const PromptRun again = run_prompt(m, 2, prompt);
  EXPECT_EQ(again.prefix.num_tokens, 16);
  EXPECT_EQ(again.prefix.state, first.saves[1].dst);
  ASSERT_EQ(again.restores.size(), 1u);
  EXPECT_EQ(again.restores[0].src, first.saves[1].dst);
  EXPECT_EQ(again.restores[0].dst, state_buffer(m.state_slot(2), 0));
  m.free(2);

  // 12 tokens in common: blocks to 12 are cached, but the state only at 8.
  const PromptRun shared = run_prompt(m, 3, cat(iota_tokens(0, 12), iota_tokens(100, 110)));
  EXPECT_EQ(shared.prefix.num_tokens, 8);
  EXPECT_EQ(shared.prefix.state, first.saves[0].dst);
  m.free(3);
  const KvStats st = m.stats();
  EXPECT_EQ(st.state_checkpoint_hits, 2);
  EXPECT_EQ(st.state_checkpoints, 2);
  EXPECT_EQ(st.state_checkpoints_used, 2);
  EXPECT_GT(st.state_checkpoint_evictions, 0);  // the third prompt's saves took the oldest buffers
  expect_clean(m);
}

TEST(HybridPrefixCaching, ACheckpointGoesWithItsBlocksHash) {
  BlockManager m(hybrid(6, 4));
  run_prompt(m, 1, iota_tokens(0, 10));  // checkpoint at 8: blocks 0 and 1 (cached after free)
  m.free(1);
  EXPECT_EQ(m.stats().state_checkpoints_used, 1);
  run_prompt(m, 2, iota_tokens(50, 73));               // 6 blocks: every cached block is evicted
  EXPECT_EQ(m.stats().state_checkpoints_used, 3);      // its own at 8, 16 and 20; the first one's is gone
  EXPECT_EQ(m.stats().state_checkpoint_evictions, 0);  // 4 buffers: none was needed
  m.free(2);
  EXPECT_EQ(m.lookup_prefix(iota_tokens(0, 10)).num_tokens, 0);
  expect_clean(m);
}

TEST(HybridPrefixCaching, CollidingHashesNeverStartFromAnotherPromptsState) {
  BlockManagerConfig c = hybrid(16, 2);
  c.hash_mask = 0;  // every block hash collides
  BlockManager m(c);
  run_prompt(m, 1, iota_tokens(0, 10));
  m.free(1);
  const CachedPrefix other = m.lookup_prefix(iota_tokens(1, 11));
  EXPECT_EQ(other.num_tokens, 0);
  EXPECT_EQ(other.state, kNoState);
  EXPECT_EQ(m.lookup_prefix(iota_tokens(0, 10)).num_tokens, 8);
}

TEST(HybridPrefixCaching, AStalePrefixOrCheckpointIsRefused) {
  BlockManager m(hybrid(16, 2));
  run_prompt(m, 1, iota_tokens(0, 10));
  m.free(1);
  CachedPrefix p = m.lookup_prefix(iota_tokens(0, 10));
  ASSERT_EQ(p.num_tokens, 8);
  CachedPrefix no_state = p;
  no_state.state = kNoState;
  EXPECT_THROW((void)m.allocate(2, 10, no_state), InvalidArgument);
  CachedPrefix wrong = p;
  wrong.state = p.state + 1;
  EXPECT_THROW((void)m.allocate(2, 10, wrong), InvalidArgument);
  EXPECT_TRUE(m.allocate(2, 10, p));
  expect_clean(m);
}

TEST(HybridPrefixCachingAudit, NamesASaveNeverMadeAndACheckpointOfAnotherGeneration) {
  BlockManager m(hybrid(16, 2));
  const std::vector<TokenId> prompt = iota_tokens(0, 10);
  ASSERT_TRUE(m.allocate(1, 8));
  m.commit(1, prompt, 8, /*checkpoint_state=*/true);
  auto v = m.audit();
  ASSERT_TRUE(v.has_value()) << "audit() missed a checkpoint copy never taken";
  EXPECT_EQ(v->invariant, Invariant::kCheckpoints) << v->message;
  ASSERT_EQ(m.take_state_saves().size(), 1u);
  expect_clean(m);
  BlockManagerTestPeer::age_checkpoint(m);
  v = m.audit();
  ASSERT_TRUE(v.has_value()) << "audit() missed a checkpoint whose block lost its hash";
  EXPECT_EQ(v->invariant, Invariant::kCheckpoints) << v->message;
}

}  // namespace
}  // namespace pagoda
