// The batched, paged, multithreaded forward pass against the dense reference,
// on random-weight models of every weight type, GQA and not, tied and untied.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/llama.h"
#include "model/reference_llama.h"
#include "model/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

std::unique_ptr<LlamaModel> make_model(const SyntheticModelSpec& spec, std::vector<uint8_t>& storage) {
  storage = synthetic_llama(spec).to_bytes();
  return std::make_unique<LlamaModel>(std::make_shared<const GgufFile>(GgufFile::parse(storage.data(), storage.size())));
}

struct Case {
  const char* name;
  SyntheticModelSpec spec;
};

// Runs n_seqs sequences of random tokens through random mixed steps (prefill
// chunks of some sequences beside decode tokens of others) over block tables
// that are a random interleaved permutation of the pool, and checks every
// logit row against the reference.
void check_against_reference(const SyntheticModelSpec& spec, int threads, uint64_t seed) {
  std::vector<uint8_t> bytes;
  auto model = make_model(spec, bytes);
  testing::ReferenceLlama ref(*model);
  const int n_seqs = 4, block_size = 16;
  std::mt19937 rng{uint32_t(seed)};
  std::vector<std::vector<int32_t>> seqs(n_seqs);
  for (auto& s : seqs) {
    s.resize(100 + rng() % 40);
    for (auto& t : s) t = int32_t(rng() % uint32_t(spec.n_vocab));
  }
  int blocks_needed = 0;
  for (const auto& s : seqs) blocks_needed += int(s.size() + block_size - 1) / block_size;
  const int pool_blocks = blocks_needed + 7;
  std::vector<int32_t> perm(static_cast<size_t>(pool_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  // Deal the permuted ids round-robin so the sequences' blocks interleave.
  std::vector<std::vector<int32_t>> tables(n_seqs);
  size_t next = 0;
  for (bool more = true; more;) {
    more = false;
    for (int s = 0; s < n_seqs; ++s)
      if (tables[s].size() * block_size < seqs[s].size()) {
        tables[s].push_back(perm[next++]);
        more = true;
      }
  }
  KvStorage kv(model->config(), pool_blocks, block_size);
  ThreadPool pool(threads);
  std::vector<std::vector<std::vector<float>>> expected;
  for (const auto& s : seqs) expected.push_back(ref.run(s));

  std::vector<size_t> done(n_seqs, 0);
  std::vector<float> logits;
  int checked = 0;
  float worst = 0;
  auto all_done = [&] {
    for (int s = 0; s < n_seqs; ++s)
      if (done[s] != seqs[s].size()) return false;
    return true;
  };
  while (!all_done()) {
    Batch batch;
    std::vector<std::pair<int, int>> wanted;  // (seq, pos)
    for (int s = 0; s < n_seqs; ++s) {
      if (done[s] == seqs[s].size() || rng() % 4 == 0) continue;  // some sequences sit a step out
      // Half the time a decode-sized step, otherwise a prefill chunk.
      const size_t chunk = std::min(seqs[s].size() - done[s], size_t(rng() % 2 ? 1 : 1 + rng() % 48));
      const int bs = batch.add_sequence(tables[s]);
      for (size_t i = 0; i < chunk; ++i) {
        const int pos = int(done[s] + i);
        const bool want = i + 1 == chunk || rng() % 3 == 0;
        batch.add(seqs[s][size_t(pos)], bs, pos, want);
        if (want) wanted.emplace_back(s, pos);
      }
      done[s] += chunk;
    }
    if (batch.tokens.empty()) continue;
    model->forward(batch, kv, pool, logits);
    ASSERT_EQ(logits.size(), wanted.size() * size_t(spec.n_vocab));
    for (size_t i = 0; i < wanted.size(); ++i) {
      const auto& exp = expected[size_t(wanted[i].first)][size_t(wanted[i].second)];
      float max_abs = 0;
      for (float v : exp) max_abs = std::max(max_abs, std::fabs(v));
      for (int v = 0; v < spec.n_vocab; ++v) {
        const float diff = std::fabs(logits[i * size_t(spec.n_vocab) + size_t(v)] - exp[size_t(v)]);
        worst = std::max(worst, diff / max_abs);
        ASSERT_LE(diff, 1e-4f * max_abs) << "seq " << wanted[i].first << " pos " << wanted[i].second << " token " << v;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 4 * 30);
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PagedForward : public ::testing::TestWithParam<Case> {};

TEST_P(PagedForward, MatchesDenseReference) {
  check_against_reference(GetParam().spec, 3, 42);
}

SyntheticModelSpec spec(TensorType type, int n_head, int n_head_kv, bool tied, int n_embd = 64) {
  SyntheticModelSpec s;
  s.type = type;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.tied_embeddings = tied;
  s.n_embd = n_embd;
  s.n_ff = 96;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Models, PagedForward,
    ::testing::Values(Case{"f32_gqa_tied", spec(TensorType::F32, 4, 2, true)},
                      Case{"f32_mha_untied", spec(TensorType::F32, 4, 4, false)},
                      Case{"f16_gqa_untied", spec(TensorType::F16, 8, 2, false)},
                      Case{"bf16_mha_tied", spec(TensorType::BF16, 2, 2, true)},
                      Case{"q8_0_gqa_untied", spec(TensorType::Q8_0, 4, 1, false)},
                      Case{"q8_0_head64_gqa", spec(TensorType::Q8_0, 4, 2, true, 256)},
                      Case{"f32_head64_mha", spec(TensorType::F32, 2, 2, false, 128)}),
    [](const auto& info) { return std::string(info.param.name); });

// A token's logits are the same whatever else is in the batch and however the
// threads split the work.
TEST(PagedForwardInvariance, LogitsIndependentOfBatchAndThreads) {
  std::vector<uint8_t> bytes;
  auto model = make_model(spec(TensorType::Q8_0, 4, 2, false), bytes);
  const int bs = 16;
  std::vector<int32_t> prompt(40), other(70);
  std::mt19937 rng(7);
  for (auto& t : prompt) t = int32_t(rng() % 320);
  for (auto& t : other) t = int32_t(rng() % 320);
  std::vector<int32_t> table_a = {5, 2, 9}, table_b = {0, 7, 3, 8, 1};

  auto run_alone = [&](int threads) {
    KvStorage kv(model->config(), 10, bs);
    ThreadPool pool(threads);
    Batch b;
    int s = b.add_sequence(table_a);
    for (int i = 0; i < int(prompt.size()); ++i) b.add(prompt[size_t(i)], s, i, true);
    std::vector<float> logits;
    model->forward(b, kv, pool, logits);
    return logits;
  };
  auto run_mixed = [&](int threads) {
    KvStorage kv(model->config(), 10, bs);
    ThreadPool pool(threads);
    std::vector<float> logits, out;
    // First the other sequence's prefill beside the first half of the prompt...
    Batch b1;
    int o = b1.add_sequence(table_b), s = b1.add_sequence(table_a);
    for (int i = 0; i < int(other.size()); ++i) b1.add(other[size_t(i)], o, i, i % 2 == 0);
    for (int i = 0; i < 20; ++i) b1.add(prompt[size_t(i)], s, i, true);
    model->forward(b1, kv, pool, logits);
    for (size_t i = 0; i < 20; ++i)
      out.insert(out.end(), logits.end() - long((20 - i) * 320), logits.end() - long((19 - i) * 320));
    // ...then the rest one token at a time.
    for (int i = 20; i < int(prompt.size()); ++i) {
      Batch b;
      int s2 = b.add_sequence(table_a);
      b.add(prompt[size_t(i)], s2, i, true);
      model->forward(b, kv, pool, logits);
      out.insert(out.end(), logits.begin(), logits.end());
    }
    return out;
  };
  const auto a = run_alone(1);
  for (int threads : {1, 2, 5}) {
    for (const auto& b : {run_alone(threads), run_mixed(threads)}) {
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_LE(std::fabs(a[i] - b[i]), 1e-5f * std::max(1.0f, std::fabs(a[i]))) << i << " threads " << threads;
    }
  }
}

TEST(PagedForwardChecks, RejectsMalformedBatches) {
  std::vector<uint8_t> bytes;
  auto model = make_model(spec(TensorType::F32, 4, 2, true), bytes);
  KvStorage kv(model->config(), 4, 16);
  ThreadPool pool(1);
  std::vector<float> logits;
  std::vector<int32_t> table = {1, 2};
  auto one = [&](int32_t token, int32_t pos, std::vector<int32_t> t) {
    Batch b;
    b.add_sequence(t);
    b.add(token, 0, pos, true);
    model->forward(b, kv, pool, logits);
  };
  EXPECT_THROW(one(320, 0, table), InvalidArgument);   // token outside the vocabulary
  EXPECT_THROW(one(-1, 0, table), InvalidArgument);
  EXPECT_THROW(one(5, 32, table), InvalidArgument);    // position past the table
  EXPECT_THROW(one(5, -1, table), InvalidArgument);
  EXPECT_THROW(one(5, 0, {4}), InvalidArgument);       // block outside the pool
  EXPECT_NO_THROW(one(5, 31, table));
}

}  // namespace
}  // namespace pagoda
