// A hybrid model's forward pass (qwen35: Gated DeltaNet layers and gated
// attention) over the recurrent state: the logits do not depend on how a
// prompt is cut into passes or batched with other sequences (token by token,
// in chunks, all at once: the same bits), a pass leaves its input state
// alone (a retry recomputes the same), and a batch that does not fit the
// state discipline is refused before anything is written. The oracle
// (llama_cpp_oracle_test.cpp) checks the numbers against llama.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "gguf/file.h"
#include "model/model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

SyntheticModelSpec hybrid_spec() {
  SyntheticModelSpec s;
  s.arch = "qwen35";
  s.n_layer = 4, s.n_embd = 64, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 32, s.rope_dims = 16;
  s.ssm_state = 16, s.ssm_k_heads = 2, s.ssm_v_heads = 4, s.full_attention_interval = 2;
  return s;
}

constexpr int kBlock = 16;

struct Hybrid {
  std::vector<uint8_t> bytes = synthetic_model(hybrid_spec()).to_bytes();
  Model model{std::make_shared<const GgufFile>(GgufFile::parse(bytes.data(), bytes.size()))};
  KvStorage kv{model.config(), 16, kBlock};
  StateStorage states{model.config(), 3};
  ThreadPool pool{2};
};

// Each sequence: its own blocks, its slot's two buffers in turn.
struct Seq {
  std::vector<int32_t> tokens;
  std::vector<int32_t> table;
  int slot = 0, done = 0;
  StateBuffer current = kNoState;
};

// Runs one pass in which each sequence computes its next `counts[i]` tokens;
// returns the logits of each sequence's last token in the pass.
std::vector<std::vector<float>> pass(Hybrid& h, std::vector<Seq*> seqs, std::vector<int> counts) {
  Batch b;
  for (size_t i = 0; i < seqs.size(); ++i) {
    Seq& s = *seqs[i];
    const int id = b.add_sequence(s.table);
    const StateBuffer out = s.current == 2 * s.slot ? 2 * s.slot + 1 : 2 * s.slot;
    b.set_state(id, s.current, out);
    for (int j = 0; j < counts[i]; ++j) b.add(s.tokens[size_t(s.done + j)], id, s.done + j, j + 1 == counts[i]);
  }
  std::vector<float> logits;
  h.model.forward(b, h.kv, h.pool, logits, &h.states);
  std::vector<std::vector<float>> rows;
  const size_t V = size_t(h.model.config().n_vocab);
  for (size_t i = 0; i < seqs.size(); ++i) {
    rows.emplace_back(logits.begin() + long(i * V), logits.begin() + long((i + 1) * V));
    seqs[i]->done += counts[i];
    seqs[i]->current = b.state_out[i];
  }
  return rows;
}

Seq make_seq(int n, uint32_t seed, int slot, int first_block) {
  std::mt19937 rng(seed);
  Seq s;
  for (int i = 0; i < n; ++i) s.tokens.push_back(int32_t(3 + rng() % 300));
  for (int i = 0; i < 4; ++i) s.table.push_back(first_block + i);
  s.slot = slot;
  return s;
}

TEST(HybridForward, LogitsDoNotDependOnHowThePromptIsCut) {
  const int n = 37;
  std::vector<float> want;
  {  // the reference: one token a pass
    Hybrid h;
    Seq s = make_seq(n, 1, 0, 0);
    for (int i = 0; i < n; ++i) want = pass(h, {&s}, {1})[0];
  }
  for (int chunk : {n, 7, 16, 2}) {
    Hybrid h;
    Seq s = make_seq(n, 1, 1, 4);
    std::vector<float> got;
    while (s.done < n) got = pass(h, {&s}, {std::min(chunk, n - s.done)})[0];
    EXPECT_EQ(got, want) << "chunks of " << chunk;
  }
  // Batched with two other sequences at other points of theirs.
  Hybrid h;
  Seq s = make_seq(n, 1, 2, 8), a = make_seq(n, 2, 0, 0), b = make_seq(n, 3, 1, 4);
  pass(h, {&a}, {5});
  std::vector<float> got;
  while (s.done < n) {
    const int c = std::min(9, n - s.done);
    got = pass(h, {&a, &s, &b}, {std::min(3, n - a.done), c, std::min(4, n - b.done)})[1];
  }
  EXPECT_EQ(got, want);
}

TEST(HybridForward, APassLeavesItsInputStateSoARetryComputesTheSame) {
  Hybrid h;
  Seq s = make_seq(20, 4, 0, 0);
  pass(h, {&s}, {12});
  Seq retry = s;  // the state as committed after 12 tokens
  const auto first = pass(h, {&s}, {8})[0];
  const auto again = pass(h, {&retry}, {8})[0];  // the same pass once more, as after a failed step
  EXPECT_EQ(again, first);
}

TEST(HybridForward, BatchesOutsideTheStateDisciplineAreRefused) {
  Hybrid h;
  std::vector<float> logits;
  std::vector<int32_t> table = {0, 1};
  auto batch = [&](int pos0, int pos1, StateBuffer in, StateBuffer out) {
    Batch b;
    const int s = b.add_sequence(table);
    b.set_state(s, in, out);
    b.add(5, s, pos0, false);
    b.add(6, s, pos1, true);
    return b;
  };
  EXPECT_THROW(h.model.forward(batch(0, 1, kNoState, 0), h.kv, h.pool, logits), InvalidArgument);  // no storage
  EXPECT_THROW(h.model.forward(batch(0, 2, kNoState, 0), h.kv, h.pool, logits, &h.states), InvalidArgument);
  EXPECT_THROW(h.model.forward(batch(3, 4, kNoState, 0), h.kv, h.pool, logits, &h.states), InvalidArgument);
  EXPECT_THROW(h.model.forward(batch(0, 1, 1, 0), h.kv, h.pool, logits, &h.states), InvalidArgument);
  EXPECT_THROW(h.model.forward(batch(3, 4, 1, 1), h.kv, h.pool, logits, &h.states), InvalidArgument);
  EXPECT_THROW(h.model.forward(batch(0, 1, kNoState, 6), h.kv, h.pool, logits, &h.states), InvalidArgument);
  Batch none;
  none.add(5, none.add_sequence(table), 0, true);
  EXPECT_THROW(h.model.forward(none, h.kv, h.pool, logits, &h.states), InvalidArgument);  // no buffers named
  EXPECT_NO_THROW(h.model.forward(batch(0, 1, kNoState, 0), h.kv, h.pool, logits, &h.states));
}

TEST(HybridForward, OnlyAttentionLayersKeepKv) {
  Hybrid h;
  const KvGroups& g = h.kv.groups();
  for (int l = 0; l < 4; ++l) EXPECT_EQ(g.group_of[size_t(l)] == kNoKv, l % 2 == 0) << l;
  EXPECT_EQ(g.layers_per_group * g.num_groups(), 2);
  const DeltaNetSpec& d = h.model.config().delta_net;
  EXPECT_EQ(h.model.config().state_bytes(),
            2 * int64_t(sizeof(float)) * ((d.conv_kernel - 1) * d.conv_channels() + 4 * 16 * 16));
}

}  // namespace
}  // namespace pagoda
