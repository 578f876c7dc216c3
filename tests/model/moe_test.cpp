// Mixtures of experts (model/moe.h): routing against a plain reference, ties
// included; the expert FFN against a double-precision reference; outputs that
// do not depend on the batch; and files whose experts contradict their
// metadata, refused by name. (llama_cpp_oracle_test.cpp compares whole
// qwen3moe and Mixtral models with llama.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gguf/file.h"
#include "model/model.h"
#include "model/moe.h"
#include "quant/rows.h"
#include "tools/quantize_model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

// Routing as the definitions say, slowly: rank every expert by score (stable
// sort: ties keep index order), in double.
std::vector<ExpertChoice> reference_route(const MoeSpec& m, const std::vector<float>& logits) {
  const int n = m.n_expert, k = m.n_used;
  auto softmax = [](std::vector<double> v) {
    const double max = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double& x : v) sum += (x = std::exp(x - max));
    for (double& x : v) x /= sum;
    return v;
  };
  std::vector<double> score(logits.begin(), logits.end());
  if (m.gating == ExpertGating::SoftmaxTopK) score = softmax(score);
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score[size_t(a)] > score[size_t(b)]; });
  std::vector<double> w;
  for (int r = 0; r < k; ++r) w.push_back(score[size_t(order[size_t(r)])]);
  if (m.gating == ExpertGating::TopKSoftmax) w = softmax(w);
  double sum = 0;
  for (double x : w) sum += x;
  std::vector<ExpertChoice> out;
  for (int r = 0; r < k; ++r)
    out.push_back({order[size_t(r)], float((m.normalize ? w[size_t(r)] / sum : w[size_t(r)]) * m.scale)});
  return out;
}

TEST(MoeRouting, MatchesTheReferenceForEveryGating) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const ExpertGating gating : {ExpertGating::SoftmaxTopK, ExpertGating::TopKSoftmax})
    for (const bool normalize : {true, false})
      for (const int k : {1, 2, 8}) {
        const MoeSpec m{
            .n_expert = 32, .n_used = k, .n_ff = 1, .gating = gating, .normalize = normalize, .scale = 2.5f};
        const int T = 20;
        std::vector<float> logits(size_t(T) * 32);
        for (float& x : logits) x = normal(rng);
        std::vector<ExpertChoice> got(size_t(T) * size_t(k));
        route_tokens(m, logits.data(), T, got.data());
        for (int t = 0; t < T; ++t) {
          const auto want =
              reference_route(m, std::vector<float>(logits.begin() + t * 32, logits.begin() + (t + 1) * 32));
          for (int r = 0; r < k; ++r) {
            const ExpertChoice& g = got[size_t(t * k + r)];
            EXPECT_EQ(g.expert, want[size_t(r)].expert) << "token " << t << " rank " << r;
            EXPECT_NEAR(g.weight, want[size_t(r)].weight, 1e-6f * m.scale);
          }
        }
      }
}

TEST(MoeRouting, TiesGoToTheLowerIndexAndNaNRanksLast) {
  const MoeSpec m{.n_expert = 6, .n_used = 3};
  // Experts 1, 3 and 4 tie for the top; 5 is NaN.
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f, 2.0f, NAN};
  std::vector<ExpertChoice> got(3);
  route_tokens({.n_expert = 6, .n_used = 3, .gating = ExpertGating::TopKSoftmax}, logits.data(), 1, got.data());
  EXPECT_EQ(got[0].expert, 1);
  EXPECT_EQ(got[1].expert, 3);
  EXPECT_EQ(got[2].expert, 4);
  for (const auto& c : got) EXPECT_NEAR(c.weight, 1.0f / 3, 1e-6f);
  const std::vector<float> nan_first = {NAN, 1.0f, 0.5f, -1.0f, 3.0f, 2.0f};
  route_tokens({.n_expert = 6, .n_used = 3, .gating = ExpertGating::TopKSoftmax}, nan_first.data(), 1, got.data());
  EXPECT_EQ(got[0].expert, 4);
  EXPECT_EQ(got[1].expert, 5);
  EXPECT_EQ(got[2].expert, 1);
  // After a softmax every probability is NaN: still k distinct experts (garbage in, no crash).
  route_tokens(m, nan_first.data(), 1, got.data());
  EXPECT_EQ(got[0].expert, 0);
  EXPECT_EQ(got[1].expert, 1);
  EXPECT_EQ(got[2].expert, 2);
}

SyntheticModelSpec moe_spec(TensorType type = TensorType::F32) {
  SyntheticModelSpec s;
  s.arch = "qwen3moe";
  s.n_embd = 64;
  s.n_layer = 2;
  s.n_ff = 96;
  s.head_dim = 32;
  s.n_expert = 8;
  s.n_expert_used = 3;
  s.n_ff_expert = 32;
  s.type = type;
  return s;
}

struct Loaded {
  std::vector<uint8_t> bytes;
  std::unique_ptr<Model> model;
  explicit Loaded(const GgufWriter& w) : bytes(w.to_bytes()) {
    model = std::make_unique<Model>(std::make_shared<const GgufFile>(GgufFile::parse(bytes.data(), bytes.size())));
  }
};

// One matrix's rows as doubles.
std::vector<double> rows_of(const Matrix& m) {
  std::vector<float> row(static_cast<size_t>(m.cols));
  std::vector<double> out;
  for (int r = 0; r < m.rows; ++r) {
    read_row(m, r, row.data());
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::vector<double> times(const Matrix& m, const std::vector<double>& x) {
  const auto w = rows_of(m);
  std::vector<double> y(static_cast<size_t>(m.rows));
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) y[size_t(r)] += w[size_t(r) * m.cols + c] * x[size_t(c)];
  return y;
}

TEST(MoeFfn, MatchesADoublePrecisionReference) {
  for (const TensorType type : {TensorType::F32, TensorType::Q8_0}) {
    const Loaded l(synthetic_model(moe_spec(type)));
    const ModelConfig& c = l.model->config();
    const LayerWeights& lw = l.model->weights().layers[1];
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const int T : {1, 7}) {
      std::vector<float> x(size_t(T) * c.n_embd), out(x.size());
      for (float& v : x) v = u(rng);
      ThreadPool pool(2);
      MoeFfn ffn;
      ffn.forward(lw, c, x.data(), T, out.data(), pool);
      EXPECT_GE(ffn.experts_run(), c.moe.n_used);
      for (int t = 0; t < T; ++t) {
        const std::vector<double> xt(x.begin() + t * c.n_embd, x.begin() + (t + 1) * c.n_embd);
        const auto logits = times(lw.router, xt);
        const auto chosen = reference_route(c.moe, std::vector<float>(logits.begin(), logits.end()));
        std::vector<double> want(size_t(c.n_embd));
        for (const ExpertChoice& e : chosen) {
          auto gate = times(lw.gate_exps[size_t(e.expert)], xt);
          const auto up = times(lw.up_exps[size_t(e.expert)], xt);
          for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
          const auto y = times(lw.down_exps[size_t(e.expert)], gate);
          for (size_t i = 0; i < y.size(); ++i) want[i] += e.weight * y[i];
        }
        // F32 weights: float rounding only; Q8_0: the activations are quantized to 8 bits too.
        const double tol = type == TensorType::F32 ? 1e-4 : 2e-2;
        for (int i = 0; i < c.n_embd; ++i)
          EXPECT_NEAR(out[size_t(t) * c.n_embd + i], want[size_t(i)], tol) << "T " << T << " token " << t;
      }
    }
  }
}

// A token's logits are the same bits alone or in a batch that sends other
// tokens to other experts (each token's choices are summed in rank order).
TEST(MoeFfn, OutputsDoNotDependOnTheBatch) {
  const Loaded l(synthetic_model(moe_spec(TensorType::Q8_0)));
  const ModelConfig& c = l.model->config();
  const LayerWeights& lw = l.model->weights().layers[0];
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int T = 12;
  std::vector<float> x(size_t(T) * c.n_embd), batched(x.size()), alone(size_t(c.n_embd));
  for (float& v : x) v = u(rng);
  ThreadPool pool(2);
  MoeFfn ffn;
  ffn.forward(lw, c, x.data(), T, batched.data(), pool);
  EXPECT_GT(ffn.experts_run(), c.moe.n_used);  // the batch spread over more experts than one token's
  for (int t = 0; t < T; ++t) {
    ffn.forward(lw, c, x.data() + size_t(t) * c.n_embd, 1, alone.data(), pool);
    EXPECT_EQ(ffn.experts_run(), c.moe.n_used);
    for (int i = 0; i < c.n_embd; ++i) ASSERT_EQ(alone[size_t(i)], batched[size_t(t) * c.n_embd + i]) << t;
  }
}

TEST(MoeConfig, ExpertsAreDescribedAndCounted) {
  const Loaded l(synthetic_model(moe_spec()));
  const ModelConfig& c = l.model->config();
  EXPECT_EQ(c.moe.n_expert, 8);
  EXPECT_EQ(c.moe.n_used, 3);
  EXPECT_EQ(c.moe.n_ff, 32);
  EXPECT_TRUE(c.moe.normalize);
  const LayerWeights& lw = l.model->weights().layers[0];
  EXPECT_EQ(lw.gate_exps.size(), 8u);
  EXPECT_EQ(lw.w_gate.rows, 0);                        // no dense FFN
  EXPECT_EQ(lw.matrices().size(), 4u + 1u + 3u * 8u);  // attention, router, experts
  // Each expert is its own slice of the 3-D tensor.
  EXPECT_EQ(lw.up_exps[1].data, lw.up_exps[0].data + size_t(32) * lw.up_exps[0].row_bytes);
  // Without the width key, llama.cpp's default: the FFN length over the experts used.
  auto s = moe_spec();
  s.n_ff_expert = 0;
  EXPECT_EQ(Loaded(synthetic_model(s)).model->config().moe.n_ff, 96 / 3);
}

TEST(MoeConfig, ContradictionsAreRefusedByName) {
  auto expect_error = [](const GgufWriter& w, const std::string& named) {
    try {
      Loaded l(w);
      ADD_FAILURE() << "loaded; expected an error naming " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  auto used = synthetic_model(moe_spec());
  used.set("qwen3moe.expert_used_count", Value::u32(9));
  expect_error(used, "expert_used_count");
  auto count = synthetic_model(moe_spec());
  count.set("qwen3moe.expert_count", Value::u32(4));  // the tensors hold 8
  expect_error(count, "ffn_gate_inp.weight");
  auto many = synthetic_model(moe_spec());
  many.set("qwen3moe.expert_count", Value::u32(100000));
  expect_error(many, "expert_count");
  auto width = synthetic_model(moe_spec());
  width.set("qwen3moe.expert_feed_forward_length", Value::u32(48));
  expect_error(width, "ffn_gate_exps.weight");
  auto none = synthetic_model(moe_spec());
  none.set("qwen3moe.expert_count", Value::u32(0));
  expect_error(none, "qwen3moe.expert_count");
  SyntheticModelSpec gemma;  // an architecture whose files never hold experts
  gemma.arch = "gemma3";
  auto dense_arch = synthetic_model(gemma);
  dense_arch.set("gemma3.expert_count", Value::u32(4));
  dense_arch.set("gemma3.expert_used_count", Value::u32(2));
  expect_error(dense_arch, "with experts");
}

// `pagoda quantize` takes the experts' 3-D stacks like matrices and leaves
// the router as it is (as llama.cpp's quantizer does).
TEST(MoeConfig, QuantizeTakesTheExpertsAndKeepsTheRouter) {
  const auto f32 = synthetic_model(moe_spec()).to_bytes();
  ThreadPool pool(2);
  const auto q8 = quantize_model(GgufFile::parse(f32.data(), f32.size()), QuantizeTarget::Q8_0, pool).to_bytes();
  const auto file = GgufFile::parse(q8.data(), q8.size());
  EXPECT_EQ(file.find_tensor("blk.0.ffn_gate_exps.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(file.find_tensor("blk.1.ffn_down_exps.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(file.find_tensor("blk.0.ffn_gate_inp.weight")->type, TensorType::F32);
  const Model model(std::make_shared<const GgufFile>(GgufFile::parse(q8.data(), q8.size())));
  EXPECT_EQ(model.weights().layers[1].up_exps[7].type, TensorType::Q8_0);
}

SyntheticModelSpec gpt_oss_spec() {
  SyntheticModelSpec s = moe_spec();
  s.arch = "gpt-oss";
  s.sliding_window = 8;
  s.qkv_bias = s.out_bias = s.expert_bias = true;
  s.tied_embeddings = false;
  return s;
}

TEST(MoeConfig, GptOssIsDeclaredAndItsPiecesChecked) {
  const Loaded l(synthetic_model(gpt_oss_spec()));
  const ModelConfig& c = l.model->config();
  EXPECT_EQ(c.moe.gating, ExpertGating::TopKSoftmax);
  EXPECT_FALSE(c.moe.normalize);
  EXPECT_EQ(c.act, Activation::SwigluOai);
  EXPECT_EQ(c.layers[0].window, 8);  // alternate layers slide, the last of each pair is global
  EXPECT_EQ(c.layers[1].window, 0);
  const LayerWeights& lw = l.model->weights().layers[0];
  EXPECT_EQ(lw.attn_sinks.size(), size_t(c.n_head));
  EXPECT_EQ(lw.router_b.size(), 8u);
  EXPECT_EQ(lw.gate_exps_b.size(), size_t(8 * c.moe.n_ff));
  EXPECT_EQ(lw.down_exps_b.size(), size_t(8 * c.n_embd));
  EXPECT_FALSE(lw.ffn_norm.empty());  // read from post_attention_norm.weight

  auto expect_error = [](const GgufWriter& w, const std::string& named) {
    try {
      Loaded bad(w);
      ADD_FAILURE() << "loaded; expected an error naming " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  auto window = synthetic_model(gpt_oss_spec());
  window.set("gpt-oss.attention.sliding_window", Value::u32(0));
  expect_error(window, "gpt-oss.attention.sliding_window");
}

// gpt-oss's clamped SwiGLU, against its definition.
TEST(MoeFfn, ClampedSwigluMatchesItsDefinition) {
  const std::vector<float> gate = {-20.0f, -1.0f, 0.0f, 0.5f, 6.9f, 7.5f, 30.0f};
  const std::vector<float> up = {3.0f, -9.0f, 0.25f, 1.0f, 8.0f, -0.5f, 2.0f};
  std::vector<float> got = gate;
  gated_activation(Activation::SwigluOai, got.data(), up.data(), int(got.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = std::min(double(gate[i]), 7.0), u = std::clamp(double(up[i]), -7.0, 7.0);
    EXPECT_NEAR(got[i], g / (1 + std::exp(-1.702 * g)) * (u + 1), 1e-5) << i;
  }
}

}  // namespace
}  // namespace pagoda
