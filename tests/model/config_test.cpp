// ModelConfig and ModelWeights on the architecture table's rows (llama,
// qwen2) and on the RoPE options: what loads, and the clear error for what
// does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "gguf/file.h"
#include "testing/build_paths.h"
#include "model/archs/archs.h"
#include "model/config.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

SyntheticModelSpec small(const std::string& arch = "llama") {
  SyntheticModelSpec s;
  s.arch = arch;
  s.qkv_bias = arch == "qwen2";
  s.n_layer = 1;
  return s;
}

// Loads the writer's model; `bytes` keeps the file alive.
std::unique_ptr<Model> load(const GgufWriter& w, std::vector<uint8_t>& bytes) {
  bytes = w.to_bytes();
  return std::make_unique<Model>(std::make_shared<const GgufFile>(GgufFile::parse(bytes.data(), bytes.size())));
}

ModelConfig config(const GgufWriter& w) {
  const auto bytes = w.to_bytes();
  return ModelConfig::from_gguf(GgufFile::parse(bytes.data(), bytes.size()));
}

TEST(ModelConfig, LlamaIsInterleavedWithoutBiases) {
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(small()), bytes);
  EXPECT_EQ(m->config().arch, "llama");
  EXPECT_EQ(m->config().rope.layout, RopeLayout::Interleaved);
  EXPECT_FALSE(m->config().qkv_bias_required);
  EXPECT_EQ(m->config().rope.factor, 1.0f);
  EXPECT_TRUE(m->weights().layers[0].bq.empty());
  EXPECT_TRUE(m->weights().rope_freq_factors.empty());
}

TEST(ModelConfig, Qwen2IsNeoXWithBiasesAndTiedEmbeddings) {
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(small("qwen2")), bytes);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_EQ(c.rope.layout, RopeLayout::NeoX);
  EXPECT_STREQ(rope_layout_name(c.rope.layout), "neox");
  EXPECT_TRUE(c.qkv_bias_required);
  EXPECT_EQ(c.n_head_kv, 2);
  const auto& l = m->weights().layers[0];
  EXPECT_EQ(l.bq.size(), size_t(c.q_dim()));
  EXPECT_EQ(l.bk.size(), size_t(c.kv_dim()));
  EXPECT_EQ(l.bv.size(), size_t(c.kv_dim()));
  EXPECT_TRUE(m->weights().tied_embeddings);
}

TEST(ModelConfig, BiasesAreAcceptedOnLlama) {
  auto s = small();
  s.qkv_bias = true;
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(s), bytes);
  EXPECT_EQ(m->weights().layers[0].bk.size(), size_t(m->config().kv_dim()));
}

TEST(ModelConfig, Qwen2WithoutBiasesIsAFormatError) {
  auto s = small("qwen2");
  s.qkv_bias = false;
  std::vector<uint8_t> bytes;
  EXPECT_THROW(load(synthetic_model(s), bytes), FormatError);
}

TEST(ModelConfig, BiasOfTheWrongLengthIsAFormatError) {
  auto w = synthetic_model(small());
  w.add_f32_tensor("blk.0.attn_k.bias", {64}, std::vector<float>(64, 0.0f));  // kv_dim is 32
  std::vector<uint8_t> bytes;
  EXPECT_THROW(load(w, bytes), FormatError);
}

TEST(ModelConfig, OtherArchitecturesAreUnsupported) {
  auto w = synthetic_model(small());
  w.set("general.architecture", Value::string("gemma"));
  try {
    config(w);
    FAIL() << "no error";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("'gemma'"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, RopeFreqsAreLoadedAndChecked) {
  auto s = small();
  s.rope_freq_factors = true;
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(s), bytes);
  ASSERT_EQ(m->weights().rope_freq_factors.size(), size_t(m->config().rope.dims / 2));
  for (float f : m->weights().rope_freq_factors) {
    EXPECT_GE(f, 1.0f);
    EXPECT_LE(f, 8.0f);
  }

  auto wrong_length = synthetic_model(small());
  wrong_length.add_f32_tensor("rope_freqs.weight", {16}, std::vector<float>(16, 1.0f));  // rope_dims/2 is 8
  EXPECT_THROW(load(wrong_length, bytes), FormatError);
  auto zero = synthetic_model(small());
  zero.add_f32_tensor("rope_freqs.weight", {8}, std::vector<float>(8, 0.0f));
  EXPECT_THROW(load(zero, bytes), FormatError);
}

TEST(ModelConfig, RopeScaling) {
  auto s = small();
  s.rope_scaling = "linear";
  s.rope_scaling_factor = 4;
  EXPECT_EQ(config(synthetic_model(s)).rope.factor, 4.0f);
  s.rope_scaling = "none";
  EXPECT_EQ(config(synthetic_model(s)).rope.factor, 1.0f);

  // The older key, and a factor without a type (llama.cpp reads both as linear).
  auto old_key = synthetic_model(small());
  old_key.set("llama.rope.scale_linear", Value::f32(2));
  EXPECT_EQ(config(old_key).rope.factor, 2.0f);
  auto untyped = synthetic_model(small("qwen2"));
  untyped.set("qwen2.rope.scaling.factor", Value::f32(8));
  EXPECT_EQ(config(untyped).rope.factor, 8.0f);

  s.rope_scaling = "linear";
  s.rope_scaling_factor = -1;
  EXPECT_THROW(config(synthetic_model(s)), FormatError);

  s.rope_scaling = "yarn";
  s.rope_scaling_factor = 4;
  s.rope_orig_ctx = 1024;
  const ModelConfig yarn = config(synthetic_model(s));
  EXPECT_EQ(yarn.rope.scaling, RopeScaling::Yarn);
  EXPECT_EQ(yarn.rope.factor, 4.0f);
  EXPECT_EQ(yarn.rope.yarn_orig_ctx, 1024);
  EXPECT_EQ(yarn.layers[0].rope.scaling, RopeScaling::Yarn);

  for (const char* type : {"longrope", "llama3"}) {
    s.rope_scaling = type;
    s.rope_scaling_factor = 4;
    try {
      config(synthetic_model(s));
      FAIL() << type << ": no error";
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find(type), std::string::npos) << e.what();
    }
  }
}

// bert: an encoder, read from the keys and tensors its converter writes.
TEST(ModelConfig, BertIsANonCausalEncoderWithLayerNorms) {
  SyntheticModelSpec spec = small("bert");
  spec.pooling_type = int(Pooling::cls);
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(spec), bytes);
  const ModelConfig& c = m->config();
  EXPECT_FALSE(c.causal);
  EXPECT_EQ(c.pooling, Pooling::cls);
  EXPECT_EQ(c.norms, NormPlacement::PostAdd);
  EXPECT_EQ(c.norm_kind, NormKind::Layer);
  EXPECT_EQ(c.act, Activation::Gelu);
  EXPECT_FALSE(c.gated_ffn());
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-12f);  // attention.layer_norm_epsilon, not the RMS key
  EXPECT_FALSE(c.rope.enabled);
  EXPECT_FALSE(c.layers[0].rope.enabled);
  const ModelWeights& w = m->weights();
  EXPECT_EQ(w.position_embd.rows, spec.n_ctx);
  EXPECT_EQ(w.token_type0.size(), size_t(c.n_embd));
  EXPECT_EQ(w.embd_norm_b.size(), size_t(c.n_embd));
  EXPECT_TRUE(w.output_norm.empty());
  const LayerWeights& l = w.layers[0];
  EXPECT_TRUE(l.attn_norm.empty());
  EXPECT_TRUE(l.ffn_norm.empty());
  EXPECT_EQ(l.attn_post_norm_b.size(), size_t(c.n_embd));
  EXPECT_EQ(l.ffn_post_norm_b.size(), size_t(c.n_embd));
  EXPECT_EQ(l.w_gate.rows, 0);
  EXPECT_EQ(l.b_up.size(), size_t(c.n_ff));
  EXPECT_EQ(l.b_down.size(), size_t(c.n_embd));
  EXPECT_EQ(l.bq.size(), size_t(c.q_dim()));
  EXPECT_STREQ(norm_placement_name(c.norms), "post-add");
  EXPECT_STREQ(activation_name(c.act), "GELU");

  // A LayerNorm epsilon of 0 is refused by name.
  auto no_eps = synthetic_model(spec);
  no_eps.set("bert.attention.layer_norm_epsilon", Value::f32(0));
  try {
    config(no_eps);
    ADD_FAILURE() << "an epsilon of 0 was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bert.attention.layer_norm_epsilon"), std::string::npos) << e.what();
  }
}

// nomic-bert: the same encoder block with RoPE, a fused QKV and SwiGLU, no positions or biases.
TEST(ModelConfig, NomicBertIsAnEncoderWithRopeAndSwiglu) {
  SyntheticModelSpec spec = small("nomic-bert");
  spec.fused_qkv = true;
  spec.pooling_type = int(Pooling::mean);
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(spec), bytes);
  const ModelConfig& c = m->config();
  EXPECT_FALSE(c.causal);
  EXPECT_EQ(c.norms, NormPlacement::PostAdd);
  EXPECT_EQ(c.norm_kind, NormKind::Layer);
  EXPECT_EQ(c.act, Activation::SiLU);
  EXPECT_TRUE(c.rope.enabled);
  EXPECT_EQ(c.rope.layout, RopeLayout::NeoX);
  EXPECT_FALSE(c.position_embd);
  const ModelWeights& w = m->weights();
  EXPECT_EQ(w.position_embd.rows, 0);
  EXPECT_EQ(w.token_type0.size(), size_t(c.n_embd));
  EXPECT_GT(w.layers[0].w_gate.rows, 0);
  EXPECT_TRUE(w.layers[0].bq.empty());
}

// A forward pass that brings part of a non-causal sequence is refused: its
// attention would read positions the pass has not written.
TEST(ModelConfig, BertRefusesAPartialInput) {
  SyntheticModelSpec spec = small("bert");
  spec.pooling_type = int(Pooling::mean);
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(spec), bytes);
  KvStorage kv(m->config(), 4, 16, KvType::F32);
  ThreadPool pool(1);
  const std::vector<int32_t> table = {0};
  Batch b;
  b.add_sequence(table);
  for (int p = 3; p < 6; ++p) b.tokens.push_back({.token = 5, .seq = 0, .pos = p, .logits = true});
  std::vector<float> out;
  EXPECT_THROW(m->forward(b, kv, pool, out), InvalidArgument);
  b.tokens.clear();
  for (int p = 0; p < 6; ++p) b.tokens.push_back({.token = 5, .seq = 0, .pos = p, .logits = true});
  m->set_hidden_output(true);
  EXPECT_NO_THROW(m->forward(b, kv, pool, out));
  EXPECT_EQ(out.size(), size_t(6 * m->config().n_embd));
}

// gemma4 as the oracle test's file (6 layers, sliding and global alternating).
SyntheticModelSpec gemma4_spec() {
  SyntheticModelSpec s = small("gemma4");
  s.n_layer = 6, s.sliding_window = 16, s.sliding_pattern = 2, s.head_dim = 32, s.head_dim_swa = 16;
  s.n_embd_per_layer = 8, s.shared_kv_layers = 2;
  return s;
}

// The declaration's reading: per-layer head sizes and RoPE, the shared
// layers' sources, and K/V storage for exactly the layers that keep their own.
TEST(ModelConfig, Gemma4LayersAndSharedKv) {
  std::vector<uint8_t> bytes;
  const auto m = load(synthetic_model(gemma4_spec()), bytes);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.n_embd_per_layer, 8);
  EXPECT_TRUE(c.v_norm);
  EXPECT_EQ(c.attn_scale, 1.0f);
  for (int l = 0; l < 6; ++l) {
    const LayerSpec& s = c.layers[size_t(l)];
    const bool sliding = l % 2 == 0;
    EXPECT_EQ(s.window, sliding ? 16 : 0) << l;
    EXPECT_EQ(s.head_dim, sliding ? 16 : 32) << l;
    EXPECT_EQ(s.rope.freq_factors, !sliding) << l;  // proportional RoPE on the global layers only
    EXPECT_EQ(s.kv_source, l == 4 ? 2 : l == 5 ? 3 : -1) << l;
  }
  // K/V floats a token: sliding layers 0, 2 keep 2 heads of 16, global 1, 3 two of 32; 4 and 5 none.
  EXPECT_EQ(c.kv_bytes_per_token(), size_t(2 * (32 + 64 + 32 + 64) * 4));
  const KvGroups one = kv_groups_of(c, false);
  EXPECT_EQ(one.group_of[4], kNoKv);
  EXPECT_EQ(one.group_of[5], kNoKv);
  const KvStorage single(c, one, 3, 16);
  EXPECT_EQ(single.bytes(), size_t(2) * (32 + 64 + 32 + 64) * 3 * 16 * 4);
  EXPECT_EQ(kv_bytes_per_token(c, one, KvType::F32), int64_t(c.kv_bytes_per_token()));
  // By window: a global group {1, 3} and a sliding one {0, 2} share pages, each slot as wide as its widest layer.
  const KvGroups two = kv_groups_of(c, true);
  ASSERT_EQ(two.num_groups(), 2);
  const KvStorage paged(c, two, 3, 16);
  EXPECT_EQ(paged.bytes(), size_t(2) * (64 + 64) * 3 * 16 * 4);
  EXPECT_EQ(kv_bytes_per_token(c, two, KvType::F32), int64_t(2 * (64 + 64) * 4 * 2));
}

// gemma4 files that contradict themselves are refused, naming the key.
TEST(ModelConfig, Gemma4BadKeysAreRefusedByName) {
  auto expect_error = [](const GgufWriter& w, const std::string& named) {
    std::vector<uint8_t> bytes;
    try {
      load(w, bytes);
      ADD_FAILURE() << "loaded; expected an error naming " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  auto pattern = synthetic_model(gemma4_spec());
  pattern.set("gemma4.attention.sliding_window_pattern",
              Value::array(ValueType::BOOL, {Value::boolean(true), Value::boolean(false)}));
  expect_error(pattern, "gemma4.attention.sliding_window_pattern");
  auto period = synthetic_model(gemma4_spec());
  period.set("gemma4.attention.sliding_window_pattern", Value::u32(2));  // gemma3's form
  expect_error(period, "gemma4.attention.sliding_window_pattern");
  auto all_shared = synthetic_model(gemma4_spec());
  all_shared.set("gemma4.attention.shared_kv_layers", Value::u32(6));
  expect_error(all_shared, "gemma4.attention.shared_kv_layers");
  // One shared layer: layer 5 (global) would read layer 4, a sliding one.
  auto unmatched = synthetic_model(gemma4_spec());
  unmatched.set("gemma4.attention.shared_kv_layers", Value::u32(1));
  expect_error(unmatched, "gemma4.attention.shared_kv_layers");
  auto head = synthetic_model(gemma4_spec());
  head.set("gemma4.attention.key_length_swa", Value::u32(8));
  head.set("gemma4.attention.value_length_swa", Value::u32(8));
  expect_error(head, "gemma4.attention.key_length_swa");
  auto global_head = synthetic_model(gemma4_spec());
  global_head.set("gemma4.attention.key_length", Value::u32(16));
  global_head.set("gemma4.attention.value_length", Value::u32(16));
  global_head.set("gemma4.rope.dimension_count", Value::u32(16));
  expect_error(global_head, "gemma4.attention.key_length");
  auto kv_heads = synthetic_model(gemma4_spec());  // an array of the wrong length
  kv_heads.set("gemma4.attention.head_count_kv", Value::i32s({2, 2, 2}));
  expect_error(kv_heads, "gemma4.attention.head_count_kv");
}

// The 26B-A4B's layers: experts beside a dense MLP, gate and up fused or not;
// a file without the experts' own norms is refused naming the tensor.
TEST(ModelConfig, Gemma4ExpertsBesideAnMlp) {
  for (bool fused : {false, true}) {
    SyntheticModelSpec s = gemma4_spec();
    s.n_embd_per_layer = 0, s.shared_kv_layers = 0, s.n_expert = 4, s.n_expert_used = 2, s.n_ff_expert = 32;
    s.fused_gate_up_exps = fused;
    std::vector<uint8_t> bytes;
    const auto m = load(synthetic_model(s), bytes);
    const ModelConfig& c = m->config();
    EXPECT_TRUE(c.moe.dense_beside);
    EXPECT_EQ(c.moe.gating, ExpertGating::SoftmaxTopK);
    const LayerWeights& l = m->weights().layers[0];
    EXPECT_EQ(l.gate_exps.size(), 4u);
    EXPECT_EQ(l.up_exps[1].rows, 32);
    EXPECT_EQ(l.w_gate.rows, c.n_ff);  // the MLP beside
    EXPECT_EQ(l.down_exps_scale.size(), 4u);
  }
  SyntheticModelSpec s = gemma4_spec();
  s.n_embd_per_layer = 0, s.shared_kv_layers = 0, s.n_expert = 4, s.n_expert_used = 2, s.n_ff_expert = 32;
  auto bytes = synthetic_model(s).to_bytes();
  const auto f = GgufFile::parse(bytes.data(), bytes.size());
  GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const TensorInfo& t : f.tensors())
    if (t.name != "blk.0.pre_ffw_norm_2.weight")
      w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  std::vector<uint8_t> out;
  try {
    load(w, out);
    ADD_FAILURE() << "loaded without blk.0.pre_ffw_norm_2.weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.pre_ffw_norm_2.weight"), std::string::npos) << e.what();
  }
}

// Writes the fuzz seeds once: PAGODA_WRITE_GEMMA4_SEED=dir (gemma4, gemma4-moe).
TEST(ModelConfig, DISABLED_WriteGemma4Seed) {
  SyntheticModelSpec s = gemma4_spec();
  s.n_vocab = 260, s.n_embd = 16, s.n_ff = 16, s.n_head = 2, s.n_head_kv = 1, s.n_layer = 4;
  s.head_dim = 8, s.head_dim_swa = 4, s.n_embd_per_layer = 4, s.sliding_window = 4, s.n_ctx = 64;
  const std::string dir = std::getenv("PAGODA_WRITE_GEMMA4_SEED");
  synthetic_model(s).write(dir + "/gemma4");
  s.n_embd_per_layer = 0, s.shared_kv_layers = 0, s.n_layer = 2, s.n_expert = 4, s.n_expert_used = 2;
  s.n_ff_expert = 8, s.fused_gate_up_exps = true;
  synthetic_model(s).write(dir + "/gemma4-moe");
}

// The fuzz target's seeds (fuzz/corpus/model_config): one tiny file per
// architecture, each must describe and load a model, so the fuzzer starts
// from inputs that reach every declaration.
TEST(ModelConfig, EveryFuzzSeedLoads) {
  const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "fuzz/corpus/model_config";
  std::set<std::string> archs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto file = std::make_shared<const GgufFile>(GgufFile::open(e.path().string()));
    archs.insert(file->get_string("general.architecture"));
    EXPECT_NO_THROW(Model{file}) << e.path();
  }
  std::set<std::string> supported;
  for (const Arch& a : architectures()) supported.insert(std::string(a.name));
  EXPECT_EQ(archs, supported) << "one seed per supported architecture";
}

// Files whose metadata and tensors disagree are refused, naming what.
TEST(ModelConfig, ContradictionsAreRefusedByName) {
  auto expect_error = [](const GgufWriter& w, const std::string& named) {
    std::vector<uint8_t> bytes;
    try {
      load(w, bytes);
      ADD_FAILURE() << "loaded; expected an error naming " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  SyntheticModelSpec g = small("gemma3");
  g.n_layer = 2;
  g.sliding_window = 8;
  auto pattern = synthetic_model(g);
  pattern.set("gemma3.attention.sliding_window_pattern",
              Value::array(ValueType::BOOL, {Value::boolean(true), Value::boolean(false), Value::boolean(true)}));
  expect_error(pattern, "gemma3.attention.sliding_window_pattern");
  auto norm = synthetic_model(small("qwen3"));
  norm.add_f32_tensor("blk.0.attn_output.bias", {32}, std::vector<float>(32, 0.0f));  // width is 64
  expect_error(norm, "blk.0.attn_output.bias");
  auto stray = synthetic_model(small("qwen3"));
  stray.add_f32_tensor("blk.0.attn_sinks.weight", {4}, std::vector<float>(4, 0.0f));
  expect_error(stray, "blk.0.attn_sinks.weight");  // a feature Pagoda lacks: refused, not ignored
  auto layers = synthetic_model(small());
  layers.set("llama.block_count", Value::u32(100000));
  expect_error(layers, "llama.block_count");
  auto nextn = synthetic_model(small("glm4"));
  nextn.set("glm4.nextn_predict_layers", Value::u32(1));
  expect_error(nextn, "glm4.nextn_predict_layers");
}

}  // namespace
}  // namespace pagoda
