// A sliding-window model over the hybrid KV cache (kv/kv_groups.h): its
// logits are the same bits whether the blocks behind each window were given
// back (and reused by other sequences, then poisoned with NaN) or kept, and
// the same as over one group of every layer that keeps K/V (the plain paged cache). The
// block manager drives the tables, as the engine does.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "gguf/file.h"
#include "kv/block_manager.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace pagoda {
namespace {

constexpr int kBlockSize = 4;

// How the tables are laid out and managed.
enum class TableMode {
  kHybrid,      // the model's KV groups; sliding groups give blocks back
  kKeepAll,     // the same groups, nothing given back
  kSingleGroup  // one group of every layer (the plain paged cache)
};

struct WindowRun {
  std::vector<std::vector<float>> logits;  // per step, that step's rows
  int32_t peak_blocks = 0;                 // most blocks in use at once
};

// Sequences of random prompts, prefilled in random chunks then decoded, all
// in shared steps; every step's logits in order.
WindowRun run_steps(Model& model, TableMode mode, int pool_blocks, uint64_t seed) {
  const ModelConfig& cfg = model.config();
  const KvGroups groups = kv_groups_of(cfg, mode != TableMode::kSingleGroup);
  KvStorage kv(cfg, groups, pool_blocks, kBlockSize);
  BlockManagerConfig bc;
  bc.num_blocks = pool_blocks;
  bc.block_size = kBlockSize;
  bc.group_windows = groups.windows;
  if (mode == TableMode::kKeepAll) bc.group_windows.assign(groups.windows.size(), 0);
  BlockManager blocks(bc);
  ThreadPool pool(2);
  std::mt19937 rng{uint32_t(seed)};
  struct Seq {
    std::vector<int32_t> tokens;
    int32_t computed = 0, length = 0;
  };
  std::vector<Seq> seqs(3);
  for (auto& s : seqs) {
    s.tokens.resize(20 + rng() % 30);
    for (auto& t : s.tokens) t = int32_t(3 + rng() % uint32_t(cfg.n_vocab - 3));
    s.length = int32_t(s.tokens.size()) + 40;  // then 40 decoded tokens (the fixed ids below)
  }
  WindowRun out;
  size_t widest = 0;  // the widest layer's K or V (gemma4's layers differ)
  for (int l = 0; l < cfg.n_layer; ++l)
    if (kv.group_of(l) != kNoKv) widest = std::max(widest, size_t(kv.kv_stride(l)));
  const std::vector<float> nan(widest, std::numeric_limits<float>::quiet_NaN());
  for (int step = 0;; ++step) {
    Batch batch;
    batch.num_groups = blocks.num_groups();
    std::vector<int32_t> chunks(seqs.size(), 0);
    for (size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      if (s.computed == s.length || (step % 3 == int(i) && s.computed > 0)) continue;  // some sit a step out
      if (s.computed == int32_t(s.tokens.size())) s.tokens.push_back(int32_t(3 + (step * 7 + int(i)) % 50));
      const int32_t chunk = std::min(int32_t(s.tokens.size()) - s.computed, int32_t(1 + rng() % 13));
      EXPECT_TRUE(blocks.allocate(i, s.computed + chunk)) << "the pool is too small";
      std::vector<std::span<const int32_t>> tables;
      for (int32_t g = 0; g < blocks.num_groups(); ++g) tables.push_back(blocks.block_table(i, g));
      const int seq = batch.add_sequence(tables);
      for (int32_t p = s.computed; p < s.computed + chunk; ++p) batch.add(s.tokens[size_t(p)], seq, p, true);
      chunks[i] = chunk;
    }
    if (batch.tokens.empty()) break;
    out.peak_blocks = std::max(out.peak_blocks, blocks.num_blocks() - blocks.num_free_blocks());
    out.logits.emplace_back();
    model.forward(batch, kv, pool, out.logits.back());
    for (size_t i = 0; i < seqs.size(); ++i) {
      seqs[i].computed += chunks[i];
      if (chunks[i] > 0) blocks.commit(i, seqs[i].tokens, seqs[i].computed);
      if (seqs[i].computed == seqs[i].length) blocks.free(i);
    }
    // Free blocks hold garbage from now on: a read of one shows in the logits.
    for (BlockId b = 0; b < pool_blocks; ++b)
      if (blocks.ref_count(b) == 0)
        for (int l = 0; l < cfg.n_layer; ++l)
          for (int slot = 0; slot < kBlockSize && kv.group_of(l) != kNoKv; ++slot)  // shared layers store none
            kv.write(l, b, slot, nan.data(), nan.data());
    EXPECT_FALSE(blocks.audit().has_value());
  }
  EXPECT_EQ(blocks.num_free_blocks(), pool_blocks);
  return out;
}

std::unique_ptr<Model> make_windowed_model(const SyntheticModelSpec& spec, std::vector<uint8_t>& storage) {
  storage = synthetic_model(spec).to_bytes();
  return std::make_unique<Model>(
      std::make_shared<const GgufFile>(GgufFile::parse_writable(storage.data(), storage.size())));
}

void expect_same_logit_bits(const WindowRun& a, const WindowRun& b, const char* what) {
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  for (size_t s = 0; s < a.logits.size(); ++s) {
    ASSERT_EQ(a.logits[s].size(), b.logits[s].size()) << what << ", step " << s;
    for (size_t i = 0; i < a.logits[s].size(); ++i) {
      ASSERT_FALSE(std::isnan(a.logits[s][i])) << what << ": a read of a freed block, step " << s;
      ASSERT_EQ(a.logits[s][i], b.logits[s][i]) << what << ", step " << s << ", value " << i;
    }
  }
}

class SlidingWindowForward : public ::testing::TestWithParam<const char*> {};

TEST_P(SlidingWindowForward, GivingBlocksBackChangesNoLogit) {
  SyntheticModelSpec spec;
  spec.arch = GetParam();
  spec.n_layer = 6;
  spec.sliding_window = 10;  // two and a half blocks: windows start mid-block
  spec.sliding_pattern = spec.arch == "gemma3" ? 3 : 2;
  // gemma4: sliding and global layers of different head sizes (page slots as
  // wide as their widest layer), layers 4 and 5 reading the K/V of 2 and 3
  // through their sources' groups, per-layer inputs.
  if (spec.arch == "gemma4")
    spec.head_dim = 32, spec.head_dim_swa = 16, spec.shared_kv_layers = 2, spec.n_embd_per_layer = 8;
  std::vector<uint8_t> bytes;
  auto model = make_windowed_model(spec, bytes);
  const KvGroups groups = kv_groups_of(model->config());
  ASSERT_GT(groups.num_groups(), 1);
  // The hybrid pool is just enough (3 sequences of up to 89 tokens, chunks of
  // up to 13), so blocks given back are reused at once.
  const WindowRun hybrid = run_steps(*model, TableMode::kHybrid, 3 * int(groups.pages_at_most(89, 13, kBlockSize)), 7);
  const WindowRun kept = run_steps(*model, TableMode::kKeepAll, 3 * 25 * groups.num_groups(), 7);
  const WindowRun single = run_steps(*model, TableMode::kSingleGroup, 3 * 25, 7);
  expect_same_logit_bits(hybrid, kept, "given back vs kept");
  expect_same_logit_bits(hybrid, single, "hybrid vs one group");
  // Giving back did free memory: fewer pages than keeping everything.
  EXPECT_LT(hybrid.peak_blocks, kept.peak_blocks);
}

INSTANTIATE_TEST_SUITE_P(Archs, SlidingWindowForward, ::testing::Values("gemma3", "gemma2", "gemma4"));

}  // namespace
}  // namespace pagoda
