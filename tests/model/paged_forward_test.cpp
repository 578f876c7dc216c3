// The batched, paged, multithreaded forward pass against the dense reference,
// on random-weight models of every weight type, GQA and not, tied and untied,
// llama and qwen2 (biases, NeoX RoPE), RoPE frequency factors and scaling;
// and the files `pagoda quantize` writes read by llama.cpp (libllama) as a second oracle.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>

#include "gguf/file.h"
#include "kernels/panels.h"
#include "model/model.h"
#include "model/reference_llama.h"
#include "model/oracle_compare.h"
#include "testing/llama_cpp_libs.h"
#include "testing/npm_oracle.h"
#include "testing/shared_data.h"
#include "tools/quantize_model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

// The synthetic model, optionally passed through `pagoda quantize`'s logic
// (a mix of weight types in one model).
std::unique_ptr<Model> make_model(const SyntheticModelSpec& spec, std::vector<uint8_t>& storage,
                                  std::optional<QuantizeTarget> requantize = std::nullopt) {
  storage = synthetic_model(spec).to_bytes();
  if (requantize) {
    ThreadPool pool(2);
    storage = quantize_model(GgufFile::parse(storage.data(), storage.size()), *requantize, pool).to_bytes();
  }
  // Writable: the model packs its matrices into row panels where the CPU runs them (kernels/panels.h).
  return std::make_unique<Model>(
      std::make_shared<const GgufFile>(GgufFile::parse_writable(storage.data(), storage.size())));
}

// F32, F16 and BF16 weights: the forward pass and the reference differ
// only in summation order: every logit within 1e-4 of the largest.
// Q8_0, Q4_0, Q5_0, Q4_K, Q6_K: the kernels quantize each activation row to 8 bits
// (the reference does the same), but the two computations reach each
// activation by different float orders, and an element near a rounding
// boundary then lands on a different 8-bit step, moving that matmul's output
// by up to a step (about 1%). Measured: RMS error 1.7-2.9% of the RMS logit,
// largest single error 1.0-3.5% of the largest logit. So: RMS within 4%,
// every logit within 6% of the largest, and the argmax the same on at least
// 90% of positions. A misread format gives errors of order 100%.
struct Case {
  const char* name;
  SyntheticModelSpec spec;
  float tolerance = 1e-4f;  // each logit, relative to the largest |logit| of the position
  std::optional<QuantizeTarget> requantize = std::nullopt;
};

// Runs n_seqs sequences of random tokens through random mixed steps (prefill
// chunks of some sequences beside decode tokens of others) over block tables
// that are a random interleaved permutation of the pool, and checks every
// logit row against the reference.
void check_against_reference(const Case& c, int threads, uint64_t seed) {
  const SyntheticModelSpec& spec = c.spec;
  std::vector<uint8_t> bytes;
  auto model = make_model(spec, bytes, c.requantize);
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
  int checked = 0, argmax_agree = 0;
  float worst = 0;
  double worst_rms = 0;
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
        ASSERT_LE(diff, c.tolerance * max_abs)
            << "seq " << wanted[i].first << " pos " << wanted[i].second << " token " << v;
      }
      {
        double e2 = 0, r2 = 0;
        for (int v = 0; v < spec.n_vocab; ++v) {
          const double d = logits[i * size_t(spec.n_vocab) + size_t(v)] - exp[size_t(v)];
          e2 += d * d;
          r2 += double(exp[size_t(v)]) * exp[size_t(v)];
        }
        worst_rms = std::max(worst_rms, std::sqrt(e2 / r2));
        ASSERT_LE(std::sqrt(e2 / r2), c.tolerance > 1e-4f ? 4e-2 : 1e-4) << "seq " << wanted[i].first;
      }
      const float* got = &logits[i * size_t(spec.n_vocab)];
      argmax_agree +=
          std::max_element(got, got + spec.n_vocab) - got == std::max_element(exp.begin(), exp.end()) - exp.begin();
      ++checked;
    }
  }
  EXPECT_GT(checked, 4 * 30);
  EXPECT_GE(argmax_agree, c.tolerance > 1e-4f ? checked * 9 / 10 : checked) << "of " << checked;
  ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
  ::testing::Test::RecordProperty("worst_rms_relative_error", std::to_string(worst_rms));
  ::testing::Test::RecordProperty("argmax_agreement", fmt::format("{}/{}", argmax_agree, checked));
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PagedForward : public ::testing::TestWithParam<Case> {};

TEST_P(PagedForward, MatchesDenseReference) { check_against_reference(GetParam(), 3, 42); }

SyntheticModelSpec spec(TensorType type, int n_head, int n_head_kv, bool tied, int n_embd = 64, int n_ff = 96) {
  SyntheticModelSpec s;
  s.type = type;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.tied_embeddings = tied;
  s.n_embd = n_embd;
  s.n_ff = n_ff;
  return s;
}

constexpr float kQuantTol = 6e-2f;

// Qwen2: Q/K/V biases and NeoX RoPE.
SyntheticModelSpec qwen2(SyntheticModelSpec s) {
  s.arch = "qwen2";
  s.qkv_bias = true;
  return s;
}

// Llama 3.1-style frequency factors, biases or linear scaling on a llama model.
SyntheticModelSpec with(SyntheticModelSpec s, bool freq_factors, bool bias, float linear = 0) {
  s.rope_freq_factors = freq_factors;
  s.qkv_bias = s.qkv_bias || bias;
  if (linear > 0) {
    s.rope_scaling = "linear";
    s.rope_scaling_factor = linear;
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Models, PagedForward,
    ::testing::Values(Case{"f32_gqa_tied", spec(TensorType::F32, 4, 2, true)},
                      Case{"f32_mha_untied", spec(TensorType::F32, 4, 4, false)},
                      Case{"f16_gqa_untied", spec(TensorType::F16, 8, 2, false)},
                      Case{"bf16_mha_tied", spec(TensorType::BF16, 2, 2, true)},
                      Case{"q8_0_gqa_untied", spec(TensorType::Q8_0, 4, 1, false), kQuantTol},
                      Case{"q8_0_head64_gqa", spec(TensorType::Q8_0, 4, 2, true, 256), kQuantTol},
                      Case{"f32_head64_mha", spec(TensorType::F32, 2, 2, false, 128)},
                      Case{"q4_0_gqa_untied", spec(TensorType::Q4_0, 4, 2, false), kQuantTol},
                      Case{"q5_0_mha_tied", spec(TensorType::Q5_0, 4, 4, true, 96), kQuantTol},
                      Case{"q4_k_gqa_untied", spec(TensorType::Q4_K, 4, 2, false, 256, 256), kQuantTol},
                      Case{"q6_k_mha_tied", spec(TensorType::Q6_K, 4, 4, true, 256, 256), kQuantTol},
                      Case{"q5_1_gqa_untied", spec(TensorType::Q5_1, 4, 2, false), kQuantTol},
                      Case{"iq4_nl_mha_tied", spec(TensorType::IQ4_NL, 4, 4, true, 96), kQuantTol},
                      Case{"mxfp4_gqa_tied", spec(TensorType::MXFP4, 4, 2, true), kQuantTol},
                      Case{"q2_k_gqa_untied", spec(TensorType::Q2_K, 4, 2, false, 256, 256), kQuantTol},
                      Case{"q3_k_mha_tied", spec(TensorType::Q3_K, 4, 4, true, 256, 256), kQuantTol},
                      Case{"q5_k_gqa_untied", spec(TensorType::Q5_K, 4, 2, false, 256, 256), kQuantTol},
                      Case{"iq4_xs_gqa_tied", spec(TensorType::IQ4_XS, 4, 2, true, 256, 256), kQuantTol},
                      // Q4_K_M rules on a 256-wide model with a 96-wide FFN: Q4_K, Q6_K
                      // (output, layer 1's attn_v), Q5_0 and Q8_0 (ffn_down fallbacks).
                      Case{"q4_k_m_mix", spec(TensorType::F32, 4, 2, false, 256, 96), kQuantTol,
                           QuantizeTarget::Q4_K_M},
                      Case{"qwen2_f32_gqa_tied", qwen2(spec(TensorType::F32, 4, 2, true))},
                      Case{"qwen2_f16_gqa_untied", qwen2(spec(TensorType::F16, 8, 2, false))},
                      Case{"qwen2_q8_0_gqa_tied", qwen2(spec(TensorType::Q8_0, 4, 1, true)), kQuantTol},
                      Case{"qwen2_f32_head64_mha", qwen2(spec(TensorType::F32, 2, 2, false, 128))},
                      Case{"qwen2_q4_k_gqa", qwen2(spec(TensorType::Q4_K, 4, 2, false, 256, 256)), kQuantTol},
                      Case{"llama_rope_freqs_f32", with(spec(TensorType::F32, 4, 2, true), true, false)},
                      Case{"llama_rope_freqs_q8_0", with(spec(TensorType::Q8_0, 4, 2, false), true, false), kQuantTol},
                      Case{"llama_qkv_bias_f32", with(spec(TensorType::F32, 4, 2, false), false, true)},
                      Case{"llama_linear_scaling_f32", with(spec(TensorType::F32, 4, 2, true), false, false, 4)},
                      Case{"qwen2_all_f16", with(qwen2(spec(TensorType::F16, 4, 2, true)), true, true, 2)}),
    [](const auto& info) { return std::string(info.param.name); });

// The mix the Q4_K_M case runs really mixes the types (the rules are in
// tools/quantize_model.h): two layers, so use_more_bits picks layer 1 only.
TEST(PagedForwardMix, Q4KMRulesGiveTheExpectedTypes) {
  std::vector<uint8_t> bytes;
  auto model = make_model(spec(TensorType::F32, 4, 2, false, 256, 96), bytes, QuantizeTarget::Q4_K_M);
  const auto& w = model->weights();
  EXPECT_EQ(w.token_embd.type, TensorType::Q4_K);
  EXPECT_EQ(w.output.type, TensorType::Q6_K);
  EXPECT_EQ(w.layers[0].wq.type, TensorType::Q4_K);
  EXPECT_EQ(w.layers[0].wv.type, TensorType::Q4_K);
  EXPECT_EQ(w.layers[1].wv.type, TensorType::Q6_K);
  EXPECT_EQ(w.layers[0].w_up.type, TensorType::Q4_K);
  EXPECT_EQ(w.layers[0].w_down.type, TensorType::Q5_0);  // Q4_K, 96-wide rows: fallback
  EXPECT_EQ(w.layers[1].w_down.type, TensorType::Q8_0);  // Q6_K, 96-wide rows: fallback
  EXPECT_EQ(w.layers[1].wo.type, TensorType::Q4_K);
}

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

// A model whose matrices were packed into row panels at load (a writable
// file, on a CPU that runs panels) gives the same logits, bit for bit, as the
// same file read-only (row-major matrices), at prefill and decode: Q8_0 with
// tied embeddings (packed once for both uses, 320 rows), Q4_0 untied (the
// embedding stays row-major), and the Q4_K_M mix (Q4_K, Q6_K output, Q5_0 and
// Q8_0 FFN down projections of 96-wide rows; 64 x 96 gate/up: 4 panels).
TEST(PagedForwardPanels, PackedModelGivesTheSameLogits) {
  ThreadPool quantize_pool(2);
  const auto tied_q8_0 = synthetic_model(spec(TensorType::Q8_0, 4, 2, true)).to_bytes();
  const auto untied_q4_0 = synthetic_model(spec(TensorType::Q4_0, 4, 2, false)).to_bytes();
  const auto f32 = synthetic_model(spec(TensorType::F32, 4, 2, false, 256, 96)).to_bytes();
  const auto mix =
      quantize_model(GgufFile::parse(f32.data(), f32.size()), QuantizeTarget::Q4_K_M, quantize_pool).to_bytes();
  for (const auto* bytes : {&tied_q8_0, &untied_q4_0, &mix}) {
    std::vector<uint8_t> copy = *bytes;
    Model rows(std::make_shared<const GgufFile>(GgufFile::parse(bytes->data(), bytes->size())));
    Model panels(std::make_shared<const GgufFile>(GgufFile::parse_writable(copy.data(), copy.size())));
    const auto& w = panels.weights();
    EXPECT_EQ(rows.weights().layers[0].wq.panel_rows, 0);
    if (prefers_panels(w.layers[0].wq.type)) {
      EXPECT_EQ(w.layers[0].wq.panel_rows, w.layers[0].wq.rows);
      EXPECT_EQ(w.layers[1].w_down.panel_rows, w.layers[1].w_down.rows);
      EXPECT_EQ(w.output.panel_rows, w.output.rows);
      EXPECT_EQ(w.token_embd.panel_rows, w.tied_embeddings ? w.token_embd.rows : 0);
    }
    const int n_vocab = panels.config().n_vocab;
    std::vector<int32_t> prompt(40);
    std::mt19937 rng(5);
    for (auto& t : prompt) t = int32_t(rng() % uint32_t(n_vocab));
    auto run = [&](Model& model) {
      KvStorage kv(model.config(), 4, 16);
      ThreadPool pool(2);
      std::vector<int32_t> table = {3, 1, 0};
      std::vector<float> logits, out;
      Batch b;
      const int s = b.add_sequence(table);
      for (int i = 0; i < 39; ++i) b.add(prompt[size_t(i)], s, i, true);
      model.forward(b, kv, pool, logits);
      out = logits;
      Batch d;
      d.add(prompt[39], d.add_sequence(table), 39, true);
      model.forward(d, kv, pool, logits);
      out.insert(out.end(), logits.begin(), logits.end());
      return out;
    };
    EXPECT_EQ(run(rows), run(panels)) << tensor_type_name(w.layers[0].wq.type);
  }
}

// The offset field of a tensor's info in a GGUF file's bytes: after the
// name, the dimension count, the dimensions and the type.
size_t tensor_offset_field(const std::vector<uint8_t>& bytes, const std::string& name) {
  const auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  const size_t pos = size_t(at - bytes.begin()) + name.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, bytes.data() + pos, 4);
  return pos + 4 + 8 * size_t(n_dims) + 4;
}

// A file may point token_embd at the bytes of a layer matrix of its shape
// (320 x 320 here, like wq): once that matrix is packed, the embedding
// lookups read its rows through the panels, and the logits stay the ones of
// the read-only file.
TEST(PagedForwardPanels, EmbeddingOnAPackedLayerMatrixReadsItsRows) {
  auto s = spec(TensorType::Q8_0, 4, 2, false, 320);
  auto bytes = synthetic_model(s).to_bytes();
  std::memcpy(bytes.data() + tensor_offset_field(bytes, "token_embd.weight"),
              bytes.data() + tensor_offset_field(bytes, "blk.0.attn_q.weight"), 8);
  std::vector<uint8_t> copy = bytes;
  Model rows(std::make_shared<const GgufFile>(GgufFile::parse(bytes.data(), bytes.size())));
  Model panels(std::make_shared<const GgufFile>(GgufFile::parse_writable(copy.data(), copy.size())));
  const auto& w = panels.weights();
  ASSERT_EQ(w.token_embd.data, w.layers[0].wq.data);
  EXPECT_EQ(w.token_embd.panel_rows, w.layers[0].wq.panel_rows);
  if (prefers_panels(TensorType::Q8_0)) {
    EXPECT_EQ(w.token_embd.panel_rows, 320);
  }
  auto run = [](Model& model) {
    KvStorage kv(model.config(), 1, 16);
    ThreadPool pool(2);
    std::vector<int32_t> table = {0};
    Batch b;
    const int seq = b.add_sequence(table);
    for (int i = 0; i < 5; ++i) b.add(int32_t(7 + 60 * i), seq, i, true);
    std::vector<float> logits;
    model.forward(b, kv, pool, logits);
    return logits;
  };
  EXPECT_EQ(run(rows), run(panels));
}

// A file's bytes serve one packed model: a second model on the same
// rearranged file would read panels as rows, so it is refused.
TEST(PagedForwardPanels, SecondModelOnARearrangedFileIsRefused) {
  auto bytes = synthetic_model(spec(TensorType::Q8_0, 4, 2, true)).to_bytes();
  auto file = std::make_shared<const GgufFile>(GgufFile::parse_writable(bytes.data(), bytes.size()));
  Model first(file);
  if (prefers_panels(TensorType::Q8_0))
    EXPECT_THROW(Model second(file), InvalidArgument);
  else
    EXPECT_NO_THROW(Model second(file));
  // A read-only file is never rearranged: any number of models.
  auto read_only = std::make_shared<const GgufFile>(GgufFile::parse(bytes.data(), bytes.size()));
  EXPECT_FALSE(read_only->edit([] {}));
}

// The dense reference with the other RoPE layout disagrees with the forward
// pass by far more than the tolerance: the layout is really tested, on both
// architectures.
TEST(PagedForwardRope, WrongLayoutIsCaught) {
  for (const bool is_qwen2 : {true, false}) {
    auto s = spec(TensorType::F32, 4, 2, true);
    if (is_qwen2) s = qwen2(s);
    std::vector<uint8_t> bytes;
    auto model = make_model(s, bytes);
    const RopeLayout wrong = is_qwen2 ? RopeLayout::Interleaved : RopeLayout::NeoX;
    testing::ReferenceLlama right_ref(*model), wrong_ref(*model, {.rope_layout = wrong});
    std::vector<int32_t> tokens(40);
    std::mt19937 rng(3);
    for (auto& t : tokens) t = int32_t(rng() % uint32_t(s.n_vocab));
    KvStorage kv(model->config(), 3, 16);
    ThreadPool pool(2);
    std::vector<int32_t> table = {2, 0, 1};
    Batch b;
    const int seq = b.add_sequence(table);
    for (int i = 0; i < int(tokens.size()); ++i) b.add(tokens[size_t(i)], seq, i, true);
    std::vector<float> logits;
    model->forward(b, kv, pool, logits);
    const auto right = right_ref.run(tokens), bad = wrong_ref.run(tokens);
    float worst_right = 0, worst_wrong = 0;
    for (size_t p = 1; p < tokens.size(); ++p) {  // position 0 is not rotated
      float max_abs = 0;
      for (float v : right[p]) max_abs = std::max(max_abs, std::fabs(v));
      for (int v = 0; v < s.n_vocab; ++v) {
        const float got = logits[p * size_t(s.n_vocab) + size_t(v)];
        worst_right = std::max(worst_right, std::fabs(got - right[p][size_t(v)]) / max_abs);
        worst_wrong = std::max(worst_wrong, std::fabs(got - bad[p][size_t(v)]) / max_abs);
      }
    }
    EXPECT_LE(worst_right, 1e-4f) << s.arch;
    EXPECT_GE(worst_wrong, 0.05f) << s.arch;
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
  EXPECT_THROW(one(320, 0, table), InvalidArgument);  // token outside the vocabulary
  EXPECT_THROW(one(-1, 0, table), InvalidArgument);
  EXPECT_THROW(one(5, 32, table), InvalidArgument);  // position past the table
  EXPECT_THROW(one(5, -1, table), InvalidArgument);
  EXPECT_THROW(one(5, 0, {4}), InvalidArgument);  // block outside the pool
  EXPECT_NO_THROW(one(5, 31, table));
}

// llama.cpp v0.5.0 (libllama, model/oracle_compare.h) as a second,
// independent reader of the files `pagoda quantize` writes: it must load
// them, and Pagoda must decode them greedily as it does, within the
// calibrated tolerance of the quantized types. A misread format (nibble
// order, scale packing, a sign) moves logprobs by whole nats.
struct OracleFiles {
  OracleFiles() : path(std::filesystem::temp_directory_path() / ("pagoda-oracle-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~OracleFiles() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

TEST(LlamaCppOracle, ReadsQuantizedFilesAsPagodaDoes) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const OracleFiles dir;
  const std::filesystem::path& tmp = dir.path;

  // stories260K (64 wide: Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL, MXFP4, F16) and a random
  // 256-wide model whose Q4_K_M mix has Q4_K and Q6_K matrices too, and that
  // the uniform Q2_K, Q3_K, Q5_K and IQ4_XS files fill with those types.
  SyntheticModelSpec wide = spec(TensorType::F32, 4, 2, false, 256, 512);
  const std::string wide_path = (tmp / "wide-f32.gguf").string();
  synthetic_model(wide).write(wide_path);
  const struct {
    std::string name, path;
    std::vector<int32_t> prompt;
  } sources[] = {{"stories260K", testing::shared_path("models/stories260K.gguf"), {1, 403, 407, 261, 378}},
                 {"wide", wide_path, {1, 300, 17, 259, 311, 5, 290}}};
  ThreadPool pool(2);
  for (const auto& src : sources) {
    const auto in = GgufFile::open(src.path);
    for (auto [target, name] : {std::pair{QuantizeTarget::Q8_0, "Q8_0"},
                                {QuantizeTarget::Q4_0, "Q4_0"},
                                {QuantizeTarget::Q4_K_M, "Q4_K_M"},
                                {QuantizeTarget::Q5_1, "Q5_1"},
                                {QuantizeTarget::IQ4_NL, "IQ4_NL"},
                                {QuantizeTarget::Q2_K, "Q2_K"},
                                {QuantizeTarget::Q3_K, "Q3_K"},
                                {QuantizeTarget::Q5_K, "Q5_K"},
                                {QuantizeTarget::Q6_K, "Q6_K"},
                                {QuantizeTarget::IQ4_XS, "IQ4_XS"},
                                {QuantizeTarget::MXFP4, "MXFP4"}}) {
      // stories260K (64 wide) takes the 32-element formats and Q4_K_M's
      // fallbacks, the 256-wide model the K-quants.
      const bool k_quant = target != QuantizeTarget::Q8_0 && target != QuantizeTarget::Q4_0 &&
                           target != QuantizeTarget::Q5_1 && target != QuantizeTarget::IQ4_NL &&
                           target != QuantizeTarget::MXFP4;
      if (src.name == "wide" ? !k_quant : k_quant && target != QuantizeTarget::Q4_K_M) continue;
      const std::string out = (tmp / (src.name + "-" + name + ".gguf")).string();
      quantize_model(in, target, pool).write(out);
      testing::expect_matches_llama_cpp(out, src.prompt, testing::kQuantTol, {.n_new = 8}, src.name + " " + name);
    }
  }
}

// llama.cpp again, on what varies by architecture: qwen2 (biases, NeoX RoPE),
// and llama with rope_freqs.weight, with biases and with linear scaling, all
// F32, over a 40-token prompt so that RoPE matters. The wrong layout, the
// factors or the scaling ignored, or the Q bias dropped moved the top 10 by
// 0.24-5.5 nats in the earlier node oracle, thousands of times the F32 tolerance.
TEST(LlamaCppOracle, ReadsArchitecturesAsPagodaDoes) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const OracleFiles dir;
  const SyntheticModelSpec base = spec(TensorType::F32, 4, 2, false, 128, 256);
  const std::pair<const char*, SyntheticModelSpec> models[] = {
      {"qwen2", qwen2(base)},
      {"qwen2_tied", qwen2(spec(TensorType::F32, 4, 1, true, 128, 256))},
      {"llama_rope_freqs", with(base, true, false)},
      {"llama_qkv_bias", with(base, false, true)},
      {"llama_linear_4", with(base, false, false, 4)},
  };
  std::vector<int32_t> prompt(40);
  std::mt19937 rng(11);
  for (auto& t : prompt) t = int32_t(3 + rng() % 300);
  for (const auto& [name, s] : models) {
    const std::string path = (dir.path / (std::string(name) + ".gguf")).string();
    synthetic_model(s).write(path);
    testing::expect_matches_llama_cpp(path, prompt, testing::kF32Tol, {.n_new = 8}, name);
  }
}

}  // namespace
}  // namespace pagoda
