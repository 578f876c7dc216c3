// Property test: a seeded random engine drives the block manager through tens
// of thousands of operations over a small pool (admit, prefill chunks, decode,
// fork, free, preempt and resume, failed steps, eviction pressure, reset),
// with audit() after every one. Two oracles watch it:
//  - a simulated K/V store: every slot holds a fingerprint of the salt and the
//    tokens up to its position; a step first checks that every position it
//    attends to holds this sequence's fingerprint (so a prefix hit, a fork or
//    a copy-on-write that served wrong K/V is caught), and only writes blocks
//    it owns alone;
//  - a naive prefix-cache model (every committed full-block prefix, exactly):
//    a lookup never hits more than the model, and hits exactly the model's
//    length when nothing was evicted since the model last saw those blocks.
// Prompts come from a few shared documents, so hits are common.
// With KV groups (a full-attention group and sliding ones), each group's table
// is checked: a sliding group must serve every position its window reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kv/block_manager.h"
#include "kv_test_util.h"

namespace pagoda {
namespace {

struct RunConfig {
  uint64_t seed = 1;
  AllocPolicy policy = AllocPolicy::kPaged;
  BlockHash hash_mask = ~BlockHash{0};
  bool caching = true;
  int ops = 20000;
  std::vector<int32_t> windows;  // KV groups (BlockManagerConfig::group_windows); empty: one
  int32_t blocks = 32;
};

class Driver {
 public:
  explicit Driver(const RunConfig& rc) : rc_(rc), rng_(rc.seed), m_(config(rc)), kBlocks(rc.blocks) {
    kv_.assign(size_t(kBlocks) * kBlockSize, 0);
    for (int d = 0; d < 3; ++d) {
      std::vector<TokenId> doc;
      for (int i = 0; i < 6 * kBlockSize; ++i) doc.push_back(uniform(0, 40));
      docs_.push_back(doc);
    }
  }

  void run() {
    for (int op = 0; op < rc_.ops; ++op) {
      step_once();
      if (::testing::Test::HasFatalFailure()) return;
      auto v = m_.audit();
      ASSERT_FALSE(v.has_value()) << "after op " << op << ": " << invariant_name(v->invariant) << ": " << v->message;
    }
    drain();
  }

  // Coverage, so the test cannot pass by doing nothing.
  int64_t lookups = 0, lookups_with_hits = 0, exact_checks = 0, block_copies = 0, forks = 0, preemptions = 0,
          failed_steps = 0, failed_admissions = 0, resets = 0;
  int64_t evictions() const { return m_.stats().evictions; }
  KvStats stats() const { return m_.stats(); }

 private:
  static constexpr int32_t kBlockSize = 4, kMaxLen = 10 * kBlockSize, kMaxLive = 8;

  struct Sim {
    SeqId id = 0;
    std::string salt;
    std::vector<TokenId> tokens;  // prompt + generated; the last may not be computed yet
    int32_t computed = 0;         // committed tokens
    int32_t limit = 0;            // finishes at this length (its reservation in kReserve)
    bool preempted = false;
  };

  static BlockManagerConfig config(const RunConfig& rc) {
    BlockManagerConfig c;
    c.block_size = kBlockSize;
    c.policy = rc.policy;
    c.hash_mask = rc.hash_mask;
    c.prefix_caching = rc.caching;
    c.group_windows = rc.windows;
    c.num_blocks = rc.blocks;
    return c;
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  // The model's key for a prefix: the salt as a leading pseudo-token.
  static std::vector<TokenId> model_key(const std::string& salt, const std::vector<TokenId>& tokens, size_t n) {
    std::vector<TokenId> key{salt.empty() ? -1 : -2 - TokenId(salt[0])};
    key.insert(key.end(), tokens.begin(), tokens.begin() + ptrdiff_t(n));
    return key;
  }

  static std::vector<uint64_t> fingerprints(const Sim& s) {
    std::vector<uint64_t> f;
    uint64_t h = 0x243f6a8885a308d3ull;
    for (char c : s.salt) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    for (TokenId t : s.tokens) {
      h = (h ^ uint32_t(t)) * 0x100000001b3ull;
      h ^= h >> 29;
      f.push_back(h);
    }
    return f;
  }

  size_t slot(std::span<const BlockId> table, int32_t pos) const {
    return size_t(table[size_t(pos / kBlockSize)]) * kBlockSize + size_t(pos % kBlockSize);
  }

  // The model saw the sequence's blocks of the first `blocks` levels cached
  // just now, in every group where `held` (the sequence's tables) has them;
  // and which prefixes the sequence alone could serve just now.
  void confirm(const Sim& s, int32_t blocks, const std::vector<std::vector<BlockId>>& held) {
    if (!rc_.caching) return;
    for (int32_t j = 1; j <= blocks; ++j) {
      const auto key = model_key(s.salt, s.tokens, size_t(j) * kBlockSize);
      auto& seen = model_[key];
      seen.resize(held.size(), -1);
      for (size_t g = 0; g < held.size(); ++g)
        if (held[g][size_t(j) - 1] != kNoBlock) seen[g] = evictions();
      bool whole = true;
      for (int32_t g = 0; g < int32_t(held.size()); ++g)
        for (int32_t i = first_needed(g, j); i < j; ++i) whole = whole && held[size_t(g)][size_t(i)] != kNoBlock;
      if (whole) servable_[key] = evictions();
    }
  }

  std::vector<std::vector<BlockId>> tables(SeqId id) const {
    std::vector<std::vector<BlockId>> t;
    for (int32_t g = 0; g < m_.num_groups(); ++g) {
      const auto table = m_.block_table(id, g);
      t.emplace_back(table.begin(), table.end());
    }
    return t;
  }

  // The levels a hit of `hit` blocks needs from group g: all of them, but
  // for a sliding group other than the anchor only its last window's.
  int32_t first_needed(int32_t g, int32_t hit) const {
    const int32_t w = m_.window(g);
    if (g == 0 || w == 0 || hit * kBlockSize - w + 1 <= 0) return 0;
    return (hit * kBlockSize - w + 1) / kBlockSize;
  }

  // Two bounds, equal with one group: a hit never exceeds what every group's
  // blocks ever held allows, and never falls short of a prefix one sequence
  // could serve with no eviction since.
  void check_lookup(const Sim& s, const CachedPrefix& p) {
    ++lookups;
    const int32_t hit = p.num_tokens / kBlockSize;
    lookups_with_hits += hit > 0;
    int32_t model_hit = 0, fresh_hit = 0;
    const int32_t max_blocks = (int32_t(s.tokens.size()) - 1) / kBlockSize;
    for (int32_t h = max_blocks; h > 0 && model_hit == 0; --h) {
      bool ok = true;
      for (int32_t g = 0; g < m_.num_groups() && ok; ++g) {
        for (int32_t j = first_needed(g, h) + 1; j <= h && ok; ++j) {
          auto it = model_.find(model_key(s.salt, s.tokens, size_t(j) * kBlockSize));
          ok = it != model_.end() && it->second.size() > size_t(g) && it->second[size_t(g)] >= 0;
        }
      }
      if (ok) model_hit = h;
    }
    for (int32_t h = max_blocks; h > 0 && fresh_hit == 0; --h) {
      auto it = servable_.find(model_key(s.salt, s.tokens, size_t(h) * kBlockSize));
      if (it != servable_.end() && it->second == evictions()) fresh_hit = h;
    }
    ASSERT_LE(hit, model_hit) << "a hit on blocks never committed";
    ASSERT_GE(hit, fresh_hit) << "cached blocks went missing without an eviction";
    exact_checks += fresh_hit > 0 && fresh_hit == model_hit;
  }

  // One forward pass of `s` up to `total` tokens: copies first, then reads of
  // everything computed, then writes, then commit (or a failure: no commit).
  void forward(Sim& s, int32_t total, const std::vector<BlockCopy>& copies) {
    for (const BlockCopy& c : copies) {
      ASSERT_EQ(m_.ref_count(c.dst), 1);
      std::copy_n(kv_.begin() + ptrdiff_t(c.src) * kBlockSize, kBlockSize, kv_.begin() + ptrdiff_t(c.dst) * kBlockSize);
      ++block_copies;
    }
    const auto f = fingerprints(s);
    for (int32_t g = 0; g < m_.num_groups(); ++g) {
      const auto table = m_.block_table(s.id, g);
      ASSERT_GE(int32_t(table.size()) * kBlockSize, total);
      // The step's first query reads from here on (all of the past without a window).
      const int32_t w = m_.window(g);
      for (int32_t p = w > 0 ? std::max(0, s.computed - w + 1) : 0; p < s.computed; ++p) {
        ASSERT_NE(table[size_t(p / kBlockSize)], kNoBlock) << "group " << g << " gave back position " << p;
        ASSERT_EQ(kv_[slot(table, p)], f[size_t(p)])
            << "sequence " << s.id << " reads wrong K/V at position " << p << " of group " << g;
      }
      for (int32_t p = s.computed; p < total; ++p) {
        const BlockId b = table[size_t(p / kBlockSize)];
        ASSERT_EQ(m_.ref_count(b), 1) << "sequence " << s.id << " writes into shared block " << b;
        ASSERT_FALSE(m_.block_hash(b).has_value()) << "a write into cached block " << b;
        kv_[slot(table, p)] = f[size_t(p)];
      }
    }
    if (chance(0.02)) {  // the step failed: never committed, the engine aborts the request
      ++failed_steps;
      m_.free(s.id);
      live_.erase(s.id);
      return;
    }
    const auto held = tables(s.id);  // before the commit gives back what left a window
    m_.commit(s.id, s.tokens, total);
    s.computed = total;
    confirm(s, total / kBlockSize, held);
  }

  void admit(Sim s) {
    const CachedPrefix p = m_.lookup_prefix(s.tokens, s.salt, s.preempted ? Admission::kResumed : Admission::kFresh);
    check_lookup(s, p);
    if (::testing::Test::HasFatalFailure()) return;
    const int32_t len = int32_t(s.tokens.size());
    const int32_t total = std::min(len, p.num_tokens + uniform(1, 3 * kBlockSize));
    const auto queue_before = m_.free_queue();
    const KvStats stats_before = m_.stats();
    std::vector<int32_t> refs_before;
    for (BlockId b : p.blocks) refs_before.push_back(b == kNoBlock ? 0 : m_.ref_count(b));
    const AllocResult r = m_.allocate(s.id, total, p, s.limit);
    if (!r) {
      ++failed_admissions;
      ASSERT_GT(r.missing_blocks, 0);
      ASSERT_FALSE(m_.contains(s.id));
      ASSERT_EQ(m_.free_queue(), queue_before);
      ASSERT_EQ(m_.stats().evictions, stats_before.evictions);
      ASSERT_EQ(m_.stats().fresh.requests + m_.stats().resumed.requests,
                stats_before.fresh.requests + stats_before.resumed.requests);
      for (size_t i = 0; i < p.blocks.size(); ++i)
        if (p.blocks[i] != kNoBlock) ASSERT_EQ(m_.ref_count(p.blocks[i]), refs_before[i]);
      waiting_.push_back(std::move(s));
      return;
    }
    confirm(s, p.num_tokens / kBlockSize, tables(s.id));
    s.computed = p.num_tokens;
    Sim& live = live_[s.id] = std::move(s);
    forward(live, total, r.copies);
  }

  void admit_new(bool pressure) {
    Sim s;
    s.id = next_id_++;
    if (pressure) {  // a long prompt nobody shares: evicts
      for (int i = uniform(4 * kBlockSize, 8 * kBlockSize); i > 0; --i) s.tokens.push_back(unique_token_++);
    } else {
      const auto& doc = docs_[size_t(uniform(0, int(docs_.size()) - 1))];
      s.tokens.assign(doc.begin(), doc.begin() + uniform(0, int(doc.size())));
      for (int i = uniform(1, 2 * kBlockSize); i > 0; --i) s.tokens.push_back(uniform(0, 3));
      const int salt = uniform(0, 19);
      s.salt = salt < 17 ? "" : salt < 19 ? "a" : "b";
    }
    s.limit = std::min(int32_t(s.tokens.size()) + uniform(1, 3 * kBlockSize), kMaxLen);
    if (int32_t(s.tokens.size()) >= s.limit) s.tokens.resize(size_t(s.limit) - 1);
    admit(std::move(s));
  }

  void step(Sim& s) {
    int32_t total;
    if (s.computed < int32_t(s.tokens.size())) {
      total = std::min(int32_t(s.tokens.size()), s.computed + uniform(1, 3 * kBlockSize));
    } else if (int32_t(s.tokens.size()) >= s.limit) {
      m_.free(s.id);  // finished
      live_.erase(s.id);
      return;
    } else {
      s.tokens.push_back(uniform(0, 3));  // the sampled token, computed by this step
      total = int32_t(s.tokens.size());
    }
    const AllocResult r = m_.allocate(s.id, total);
    if (!r) {
      ASSERT_EQ(rc_.policy, AllocPolicy::kPaged) << "a reserved sequence ran out of blocks";
      ASSERT_EQ(m_.num_tokens(s.id), s.computed);  // nothing changed
      ++preemptions;
      m_.free(s.id);  // preempt; recompute later
      Sim back = std::move(s);
      live_.erase(back.id);
      back.computed = 0;
      back.preempted = true;
      waiting_.push_back(std::move(back));
      return;
    }
    forward(s, total, r.copies);
  }

  void fork(Sim& s) {
    const SeqId child = next_id_++;
    const AllocResult r = m_.fork(s.id, child);
    if (!r) {
      ASSERT_EQ(rc_.policy, AllocPolicy::kReserve);
      ASSERT_FALSE(m_.contains(child));
      return;
    }
    ++forks;
    for (const BlockCopy& c : r.copies) {
      ++block_copies;
      std::copy_n(kv_.begin() + ptrdiff_t(c.src) * kBlockSize, kBlockSize, kv_.begin() + ptrdiff_t(c.dst) * kBlockSize);
    }
    Sim c = s;
    c.id = child;
    live_[child] = std::move(c);
  }

  Sim& random_live() {
    auto it = live_.begin();
    std::advance(it, uniform(0, int(live_.size()) - 1));
    return it->second;
  }

  void drain() {
    for (auto& [id, s] : live_) m_.free(id);
    live_.clear();
    waiting_.clear();
    ASSERT_EQ(m_.num_free_blocks(), kBlocks) << "blocks leaked";
    ASSERT_EQ(m_.num_seqs(), 0u);
    ASSERT_FALSE(m_.audit().has_value());
  }

  void step_once() {
    const int dice = uniform(0, 999);
    if (dice < 250) {
      if (int(live_.size()) < kMaxLive) admit_new(false);
    } else if (dice < 330) {
      if (!waiting_.empty() && int(live_.size()) < kMaxLive) {
        Sim s = std::move(waiting_.front());
        waiting_.erase(waiting_.begin());
        admit(std::move(s));
      }
    } else if (dice < 800) {
      if (!live_.empty()) step(random_live());
    } else if (dice < 860) {
      if (!live_.empty() && int(live_.size()) < kMaxLive) fork(random_live());
    } else if (dice < 940) {
      if (!live_.empty()) {
        const SeqId id = random_live().id;
        m_.free(id);
        live_.erase(id);
      }
    } else if (dice < 970) {
      if (int(live_.size()) < kMaxLive) admit_new(true);
    } else if (dice < 985) {
      m_.free(next_id_ + 1000);  // unknown sequences: a no-op
      if (!live_.empty()) {
        ASSERT_FALSE(m_.reset_prefix_cache()) << "reset while blocks are in use";
      }
    } else if (dice < 990) {
      drain();
      if (chance(0.5)) {
        ASSERT_TRUE(m_.reset_prefix_cache());
        ASSERT_EQ(m_.stats().hashed_blocks, 0);
        model_.clear();
        servable_.clear();
        ++resets;
      }
    }
    // else: an idle step
  }

  RunConfig rc_;
  std::mt19937_64 rng_;
  BlockManager m_;
  const int32_t kBlocks;
  std::map<SeqId, Sim> live_;
  std::vector<Sim> waiting_;
  SeqId next_id_ = 0;
  TokenId unique_token_ = 1000;
  std::vector<uint64_t> kv_;
  std::vector<std::vector<TokenId>> docs_;
  // full-block prefix -> per group, evictions when last confirmed (-1: never)
  std::map<std::vector<TokenId>, std::vector<int64_t>> model_;
  std::map<std::vector<TokenId>, int64_t> servable_;  // prefix -> evictions when one sequence could serve it
};

void run_and_check(const RunConfig& rc) {
  Driver d(rc);
  d.run();
  if (::testing::Test::HasFatalFailure()) return;
  ::testing::Test::RecordProperty("lookups", int(d.lookups));
  if (getenv("KV_PROPERTY_VERBOSE")) {
    printf(
        "lookups %ld hits %ld exact %ld copies %ld forks %ld preempt %ld failed steps %ld failed admissions %ld resets "
        "%ld evictions %ld\n",
        long(d.lookups), long(d.lookups_with_hits), long(d.exact_checks), long(d.block_copies), long(d.forks),
        long(d.preemptions), long(d.failed_steps), long(d.failed_admissions), long(d.resets), long(d.evictions()));
  }
  EXPECT_GT(d.forks, 100);
  EXPECT_GT(d.block_copies, 50);
  EXPECT_GT(d.failed_steps, 50);
  EXPECT_GT(d.failed_admissions, 10);
  EXPECT_GT(d.resets, 0);
  if (rc.policy == AllocPolicy::kPaged) {
    EXPECT_GT(d.preemptions, 50);
  }
  if (rc.caching) {
    // Sliding groups give blocks back as they go, so their pools churn more.
    const bool windows = !rc.windows.empty();
    EXPECT_GT(d.lookups_with_hits * (windows ? 5 : 3), d.lookups) << "hits should be common";
    EXPECT_GT(d.exact_checks, windows ? 150 : 300);
    EXPECT_GT(d.evictions(), 500);
    if (rc.policy == AllocPolicy::kPaged) {
      EXPECT_GT(d.stats().resumed.requests, 50);  // counted apart
    }
    EXPECT_GT(d.stats().fresh.hits, 0);
  } else {
    EXPECT_EQ(d.lookups_with_hits, 0);
  }
}

TEST(KvProperty, PagedPrefixCaching) { run_and_check({.seed = 1}); }

TEST(KvProperty, PagedWithForcedHashCollisions) {
  // Every block hashes to 0: hits must come from full-key matches alone.
  run_and_check({.seed = 2, .hash_mask = 0});
}

TEST(KvProperty, ReservePolicy) { run_and_check({.seed = 3, .policy = AllocPolicy::kReserve}); }

TEST(KvProperty, PagedWithoutPrefixCaching) { run_and_check({.seed = 4, .caching = false}); }

// KV groups: a full-attention group and two sliding ones (windows of 2 and 5
// blocks, and one of 3 tokens: less than a block), in a pool of as many pages
// per group as above.
TEST(KvProperty, SlidingWindowGroups) { run_and_check({.seed = 5, .windows = {0, 8, 3, 20}, .blocks = 104}); }

TEST(KvProperty, SlidingWindowGroupsWithForcedHashCollisions) {
  run_and_check({.seed = 6, .hash_mask = 0, .windows = {0, 0, 8}, .blocks = 96});
}

// No full group (Mistral-style): the sliding anchor proves prefixes alone.
TEST(KvProperty, OnlySlidingGroups) { run_and_check({.seed = 7, .windows = {6, 12}, .blocks = 36}); }

TEST(KvProperty, SlidingWindowGroupsReserved) {
  run_and_check({.seed = 8, .policy = AllocPolicy::kReserve, .windows = {0, 8}, .blocks = 64});
}

}  // namespace
}  // namespace pagoda
