#include "tools/synthetic.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "gguf/file.h"
#include "model/config.h"
#include "quant/rows.h"
#include "util/error.h"

namespace pagoda {
namespace {

// Uniform random values from a counter-based generator (SplitMix64 of a
// running counter): cheap enough to fill a billion-parameter model in
// seconds, and the same values on every machine.
class Filler {
 public:
  explicit Filler(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull) {}
  // Uniform in [center - spread, center + spread].
  std::vector<float> values(size_t n, float center, float spread) {
    std::vector<float> v(n);
    for (auto& x : v) {
      uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      const float unit = float(z >> 40) * (1.0f / float(1 << 24));  // [0, 1)
      x = center + spread * (2.0f * unit - 1.0f);
    }
    return v;
  }
  // This generator where it is now, and this one moved past the next n
  // values: the copy makes them later (one step of the counter a value).
  Filler take(size_t n) {
    Filler now = *this;
    state_ += 0x9E3779B97F4A7C15ull * uint64_t(n);
    return now;
  }

 private:
  uint64_t state_;
};

// A matrix's values are made and quantized when the file is written, so a
// model larger than memory is written one tensor at a time; the values are
// those the filler would have given here. Runs of rows are made on all
// cores (quantizing 30B weights on one takes most of an hour).
void add_lazy(GgufWriter& w, Filler& fill, const std::string& name, std::vector<uint64_t> shape, float spread,
              TensorType type) {
  const size_t row = size_t(shape[0]);
  size_t n = 1;
  for (uint64_t d : shape) n *= size_t(d);
  w.add_tensor(name, type, std::move(shape), [from = fill.take(n), n, row, spread, type] {
    const size_t rows = n / row;
    const size_t parts = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::max<size_t>(1, rows / 64));
    std::vector<std::vector<uint8_t>> bytes(parts);
    std::vector<std::exception_ptr> errors(parts);
    auto make = [&](size_t p) {
      try {
        const size_t first = rows * p / parts, last = rows * (p + 1) / parts;
        Filler f = from;
        (void)f.take(first * row);  // skip to this part's first value
        const auto values = f.values((last - first) * row, 0.0f, spread);
        bytes[p] = quantize(type, values.data(), values.size());
      } catch (...) {
        errors[p] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (size_t p = 1; p < parts; ++p) threads.emplace_back(make, p);
    make(0);
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
    std::vector<uint8_t> out = std::move(bytes[0]);
    for (size_t p = 1; p < parts; ++p) out.insert(out.end(), bytes[p].begin(), bytes[p].end());
    return out;
  });
}

void add_matrix(GgufWriter& w, Filler& fill, const std::string& name, int rows, int cols, TensorType type) {
  // Scaled so activations keep unit size through the layers.
  add_lazy(w, fill, name, {uint64_t(cols), uint64_t(rows)}, std::sqrt(3.0f / float(cols)), type);
}

// n matrices of rows x cols as one 3-D tensor (the experts' layout).
void add_matrices(GgufWriter& w, Filler& fill, const std::string& name, int n, int rows, int cols, TensorType type) {
  add_lazy(w, fill, name, {uint64_t(cols), uint64_t(rows), uint64_t(n)}, std::sqrt(3.0f / float(cols)), type);
}

void add_norm(GgufWriter& w, Filler& fill, const std::string& name, int n) {
  w.add_f32_tensor(name, {uint64_t(n)}, fill.values(size_t(n), 1.0f, 0.2f));
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves,
// the others for U+0100 upwards in byte order (a space is "Ġ"). A fact of the
// format, spelled out here so the model library needs no tokenizer.
std::string byte_level(uint8_t b) {
  auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
  uint32_t cp = b;
  if (!printable(b)) {
    cp = 256;
    for (int c = 0; c < b; ++c) cp += !printable(c);
  }
  if (cp < 0x80) return std::string(1, char(cp));
  return {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
}

// The spec's special tokens (a chat template's markers) in place of the last
// filler pieces, as control tokens; merges that made those pieces are dropped.
// The EOS id, where the spec names its token.
void add_special_tokens(const SyntheticModelSpec& s, size_t first_filler, std::vector<std::string>& tokens,
                        std::vector<int32_t>& types, std::vector<std::string>* merges, GgufWriter& w) {
  const size_t n = s.special_tokens.size();
  if (first_filler + n > tokens.size()) fail<InvalidArgument>("synthetic model: no room for {} special tokens", n);
  for (size_t i = 0; i < n; ++i) {
    tokens[tokens.size() - n + i] = s.special_tokens[i];
    types[types.size() - n + i] = 3;
  }
  if (merges) merges->resize(merges->size() - std::min(n, merges->size()));
  if (s.eos_token.empty()) return;
  const auto it = std::find(tokens.begin(), tokens.end(), s.eos_token);
  if (it == tokens.end())
    fail<InvalidArgument>("synthetic model: EOS token '{}' is not in the vocabulary", s.eos_token);
  w.set("tokenizer.ggml.eos_token_id", Value::u32(uint32_t(it - tokens.begin())));
}

// <unk>, <s>, </s>, the byte tokens, then filler pieces.
void spm_vocab(GgufWriter& w, const SyntheticModelSpec& s) {
  const int n_vocab = s.n_vocab;
  const std::string& arch = s.arch;
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256 && int(tokens.size()) < n_vocab; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  while (int(tokens.size()) < n_vocab) {
    tokens.push_back(fmt::format("\u2581w{}", tokens.size()));
    types.push_back(1);
  }
  // Phi-3's vocabulary has <|endoftext|>, and llama.cpp looks it up by name in phi3 files.
  if (arch == "phi3") {
    tokens.back() = "<|endoftext|>";
    types.back() = 3;
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
  w.set("tokenizer.ggml.model", Value::string("llama"));
  w.set("tokenizer.ggml.tokens", Value::strings(tokens));
  w.set("tokenizer.ggml.scores", Value::f32s(scores));
  w.set("tokenizer.ggml.token_type", Value::i32s(types));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(2));
  w.set("tokenizer.ggml.unknown_token_id", Value::u32(0));
  add_special_tokens(s, 259, tokens, types, nullptr, w);
  w.set("tokenizer.ggml.tokens", Value::strings(tokens));
  w.set("tokenizer.ggml.token_type", Value::i32s(types));
}

// The 256 byte symbols, <|endoftext|>, then pieces merged from them: a space
// or a letter followed by a letter (" a", " b", ..., "aa", "ab", ...).
void gpt2_vocab(GgufWriter& w, const SyntheticModelSpec& s, const std::string& pre) {
  const int n_vocab = s.n_vocab;
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_level(uint8_t(b)));
    types.push_back(1);
  }
  tokens.push_back("<|endoftext|>");
  types.push_back(3);
  const std::string firsts = " abcdefghijklmnopqrstuvwxyz";
  for (size_t k = 0; int(tokens.size()) < n_vocab; ++k) {
    if (k >= firsts.size() * 26) fail<InvalidArgument>("synthetic model: gpt2 vocabulary of {} is too large", n_vocab);
    const std::string left = byte_level(uint8_t(firsts[k / 26])), right = byte_level(uint8_t('a' + k % 26));
    tokens.push_back(left + right);
    types.push_back(1);
    merges.push_back(left + " " + right);
  }
  w.set("tokenizer.ggml.model", Value::string("gpt2"));
  w.set("tokenizer.ggml.pre", Value::string(pre));
  w.set("tokenizer.ggml.tokens", Value::strings(tokens));
  w.set("tokenizer.ggml.token_type", Value::i32s(types));
  w.set("tokenizer.ggml.merges", Value::strings(merges));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(256));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(256));
  add_special_tokens(s, 257, tokens, types, &merges, w);
  w.set("tokenizer.ggml.tokens", Value::strings(tokens));
  w.set("tokenizer.ggml.token_type", Value::i32s(types));
  w.set("tokenizer.ggml.merges", Value::strings(merges));
}

// The keys an architecture's files carry beyond the shared ones, at values
// like the real models' (the scales of granite-3, gemma's soft-caps).
void arch_keys(GgufWriter& w, const SyntheticModelSpec& s) {
  const std::string a = s.arch + ".";
  if (s.arch == "granite") {
    w.set(a + "embedding_scale", Value::f32(12.0f));
    w.set(a + "residual_scale", Value::f32(0.22f));
    w.set(a + "attention.scale", Value::f32(0.0078125f));
    w.set(a + "logit_scale", Value::f32(8.0f));
  } else if (s.arch == "mistral3") {  // Ministral 3's YaRN and query temperature
    w.set(a + "rope.scaling.yarn_beta_fast", Value::f32(32.0f));
    w.set(a + "rope.scaling.yarn_beta_slow", Value::f32(1.0f));
    w.set(a + "rope.scaling.yarn_log_multiplier", Value::f32(1.0f));
    w.set(a + "attention.temperature_scale", Value::f32(0.1f));
  } else if (s.arch == "bert" || s.arch == "nomic-bert") {  // as conversion/bert.py writes them
    w.set(a + "attention.layer_norm_epsilon", Value::f32(1e-12f));
    w.set(a + "attention.causal", Value::boolean(s.causal));
    w.set("tokenizer.ggml.token_type_count", Value::u32(2));
  } else if (s.arch == "gemma2") {
    w.set(a + "attn_logit_softcapping", Value::f32(s.softcaps[0]));
    w.set(a + "final_logit_softcapping", Value::f32(s.softcaps[1]));
  } else if (s.arch == "gemma4") {  // as conversion/gemma.py writes them
    w.set(a + "final_logit_softcapping", Value::f32(30.0f));
    const int hd_swa = s.head_dim_swa > 0 ? s.head_dim_swa : s.n_embd / s.n_head;
    w.set(a + "attention.key_length_swa", Value::u32(uint32_t(hd_swa)));
    w.set(a + "attention.value_length_swa", Value::u32(uint32_t(hd_swa)));
    w.set(a + "rope.dimension_count_swa", Value::u32(uint32_t(hd_swa)));
    w.set(a + "embedding_length_per_layer_input", Value::u32(uint32_t(s.n_embd_per_layer)));
    w.set(a + "attention.shared_kv_layers", Value::u32(uint32_t(s.shared_kv_layers)));
    std::vector<Value> sliding;  // the last of each period global
    const int period = std::max(s.sliding_pattern, 1);
    for (int l = 0; l < s.n_layer; ++l) sliding.push_back(Value::boolean(l % period < period - 1));
    w.set(a + "attention.sliding_window_pattern", Value::array(ValueType::BOOL, sliding));
  }
  if (s.arch.starts_with("qwen35")) {
    w.set(a + "ssm.conv_kernel", Value::u32(uint32_t(s.ssm_conv_kernel)));
    w.set(a + "ssm.state_size", Value::u32(uint32_t(s.ssm_state)));
    w.set(a + "ssm.group_count", Value::u32(uint32_t(s.ssm_k_heads)));
    w.set(a + "ssm.time_step_rank", Value::u32(uint32_t(s.ssm_v_heads)));
    w.set(a + "ssm.inner_size", Value::u32(uint32_t(s.ssm_v_heads * s.ssm_state)));
    w.set(a + "full_attention_interval", Value::u32(uint32_t(s.full_attention_interval)));
    // Interleaved M-RoPE's sections split the rotated pairs as Qwen3.5's [11, 11, 10, 0] split 32.
    const int hd = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
    const int pairs = (s.rope_dims > 0 ? s.rope_dims : hd) / 2;
    w.set(a + "rope.dimension_sections", Value::i32s({(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}));
  }
  if (s.n_expert > 0) {
    w.set(a + "expert_count", Value::u32(uint32_t(s.n_expert)));
    w.set(a + "expert_used_count", Value::u32(uint32_t(s.n_expert_used)));
  }
  if (s.n_ff_expert > 0) w.set(a + "expert_feed_forward_length", Value::u32(uint32_t(s.n_ff_expert)));
  if (s.sliding_window > 0) w.set(a + "attention.sliding_window", Value::u32(uint32_t(s.sliding_window)));
  if (s.sliding_pattern > 0 && s.arch != "gemma4")
    w.set(a + "attention.sliding_window_pattern", Value::u32(uint32_t(s.sliding_pattern)));
  if (s.rope_freq_base_swa > 0) w.set(a + "rope.freq_base_swa", Value::f32(s.rope_freq_base_swa));
}

// A Gated DeltaNet layer's tensors, at values like trained ones: decays
// exp(a softplus(.)) mostly in (0.3, 1), learning rates around a half.
void add_delta_net(GgufWriter& w, Filler& fill, const std::string& p, const ModelConfig& c, TensorType type) {
  const DeltaNetSpec& d = c.delta_net;
  const int E = c.n_embd, C = d.conv_channels(), H = d.n_v_heads, V = H * d.head_v_dim, K = d.conv_kernel;
  add_matrix(w, fill, p + "attn_qkv.weight", C, E, type);
  add_matrix(w, fill, p + "attn_gate.weight", V, E, type);
  w.add_f32_tensor(p + "ssm_conv1d.weight", {uint64_t(K), uint64_t(C)},
                   fill.values(size_t(K) * C, 0.0f, std::sqrt(3.0f / float(K))));
  w.add_f32_tensor(p + "ssm_dt.bias", {uint64_t(H)}, fill.values(size_t(H), 0.0f, 1.0f));
  w.add_f32_tensor(p + "ssm_a", {uint64_t(H)}, fill.values(size_t(H), -0.6f, 0.5f));
  add_matrix(w, fill, p + "ssm_beta.weight", H, E, type);
  add_matrix(w, fill, p + "ssm_alpha.weight", H, E, type);
  add_norm(w, fill, p + "ssm_norm.weight", d.head_v_dim);
  add_matrix(w, fill, p + "ssm_out.weight", E, V, type);
}

// The model's own reading of the metadata written so far: which tensors it has.
ModelConfig declared(const GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  return ModelConfig::from_gguf(GgufFile::parse(bytes.data(), bytes.size()));
}

}  // namespace

SyntheticModelSpec benchmark_shape(const std::string& name) {
  SyntheticModelSpec s;
  s.tied_embeddings = false;
  s.n_ctx = 4096;
  s.n_vocab = 32000;
  if (name == "10m" || name == "10m-hybrid") {
    s.n_vocab = 10240, s.n_embd = 256, s.n_ff = 768, s.n_layer = 6, s.n_head = 4, s.n_head_kv = 2;
    if (name == "10m-hybrid") s.arch = "qwen35", s.n_layer = 8, s.head_dim = 64, s.rope_dims = 16, s.ssm_state = 32;
  } else if (name == "100m") {
    s.n_embd = 768, s.n_ff = 2048, s.n_layer = 12, s.n_head = 12, s.n_head_kv = 4;
  } else if (name == "1b") {
    s.n_embd = 2048, s.n_ff = 5632, s.n_layer = 22, s.n_head = 32, s.n_head_kv = 4;
  } else if (name == "8b") {  // Llama-3.1-8B's: the GPU checks' larger dense model
    s.n_vocab = 128256, s.n_embd = 4096, s.n_ff = 14336, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 8;
    s.rope_freq_base = 500000.0f;
  } else if (name == "30b-a3b" || name == "30b-a3b-full") {
    s.arch = "qwen3moe";
    s.n_embd = 2048, s.n_ff = 6144, s.n_layer = name == "30b-a3b" ? 8 : 48, s.n_head = 32, s.n_head_kv = 4;
    s.head_dim = 128;
    s.n_expert = 128, s.n_expert_used = 8, s.n_ff_expert = 768;
  } else if (name == "gpt-oss-20b" || name == "gpt-oss-20b-full") {
    // gpt-oss-20b's layers (4 of its 24, or all): 32 experts of 2880 (4 a
    // token), 64 heads of 64 over 8, alternating 128-token windows, YaRN, biases.
    s.arch = "gpt-oss";
    s.n_embd = 2880, s.n_ff = 2880, s.n_layer = name == "gpt-oss-20b" ? 4 : 24;
    if (name == "gpt-oss-20b-full") s.n_vocab = 201088;  // o200k_harmony's size: the output matrix a token reads
    s.n_head = 64, s.n_head_kv = 8, s.head_dim = 64;
    s.n_expert = 32, s.n_expert_used = 4, s.n_ff_expert = 2880, s.sliding_window = 128;
    s.qkv_bias = s.out_bias = s.expert_bias = true, s.rope_freq_base = 150000.0f;
    s.rope_scaling = "yarn", s.rope_scaling_factor = 32.0f, s.rope_orig_ctx = 4096;
  } else if (name == "9b-hybrid" || name == "35b-a3b-hybrid") {
    // Qwen3.5-9B's layers: Gated DeltaNet (16 key heads read by 32 value
    // heads of 128) three in four, gated attention (16 heads of 256 over 4).
    s.arch = "qwen35";
    s.n_embd = 4096, s.n_ff = 12288, s.n_layer = 8, s.n_head = 16, s.n_head_kv = 4, s.head_dim = 256;
    s.rope_dims = 64, s.rope_freq_base = 1e7f, s.ssm_state = 128, s.ssm_k_heads = 16, s.ssm_v_heads = 32;
    if (name == "35b-a3b-hybrid") {  // Qwen3.5/3.6-35B-A3B's: 256 experts of 512, 8 a token and a shared one
      s.arch = "qwen35moe";
      s.n_embd = 2048, s.n_ff = 512, s.n_layer = 4, s.n_head_kv = 2;
      s.n_expert = 256, s.n_expert_used = 8, s.n_ff_expert = 512;
    }
  } else {
    fail<InvalidArgument>(
        "unknown model shape '{}' (10m, 100m, 1b, 8b, 30b-a3b, 30b-a3b-full, gpt-oss-20b, gpt-oss-20b-full, "
        "10m-hybrid, "
        "9b-hybrid, "
        "35b-a3b-hybrid)",
        name);
  }
  return s;
}

GgufWriter synthetic_model(const SyntheticModelSpec& s) {
  if (s.n_vocab < 3 || s.n_head % s.n_head_kv != 0 || (s.head_dim == 0 && s.n_embd % s.n_head != 0))
    fail<InvalidArgument>("synthetic model: inconsistent shape");
  GgufWriter w;
  const std::string a = s.arch + ".";
  const int hd = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  w.set("general.architecture", Value::string(s.arch));
  w.set("general.name", Value::string("synthetic-" + s.arch));
  w.set(a + "context_length", Value::u32(uint32_t(s.n_ctx)));
  if (s.pooling_type > 0) w.set(a + "pooling_type", Value::u32(uint32_t(s.pooling_type)));
  if (s.n_cls_out > 0) {  // labels as qwen3's rerankers name theirs
    std::vector<std::string> labels;
    for (int i = 0; i < s.n_cls_out; ++i) labels.push_back(i == 0 ? "yes" : i == 1 ? "no" : fmt::format("label{}", i));
    w.set(a + "classifier.output_labels", Value::strings(labels));
  }
  w.set(a + "embedding_length", Value::u32(uint32_t(s.n_embd)));
  w.set(a + "block_count", Value::u32(uint32_t(s.n_layer)));
  w.set(a + "feed_forward_length", Value::u32(uint32_t(s.n_ff)));
  w.set(a + "attention.head_count", Value::u32(uint32_t(s.n_head)));
  w.set(a + "attention.head_count_kv", Value::u32(uint32_t(s.n_head_kv)));
  if (s.n_head_kv_global > 0) {  // per layer, as conversion/gemma.py writes the 31B's: the global ones differ
    std::vector<int32_t> kv_heads;
    const int period = std::max(s.sliding_pattern, 1);
    for (int l = 0; l < s.n_layer; ++l) kv_heads.push_back(l % period < period - 1 ? s.n_head_kv : s.n_head_kv_global);
    w.set(a + "attention.head_count_kv", Value::i32s(kv_heads));
  }
  if (s.head_dim > 0) {
    w.set(a + "attention.key_length", Value::u32(uint32_t(hd)));
    w.set(a + "attention.value_length", Value::u32(uint32_t(hd)));
  }
  w.set(a + "attention.layer_norm_rms_epsilon", Value::f32(s.rms_eps));
  w.set(a + "rope.freq_base", Value::f32(s.rope_freq_base));
  w.set(a + "rope.dimension_count", Value::u32(uint32_t(s.rope_dims > 0 ? s.rope_dims : hd)));
  if (!s.rope_scaling.empty()) {
    w.set(a + "rope.scaling.type", Value::string(s.rope_scaling));
    w.set(a + "rope.scaling.factor", Value::f32(s.rope_scaling_factor));
  }
  if (s.rope_orig_ctx > 0) w.set(a + "rope.scaling.original_context_length", Value::u32(uint32_t(s.rope_orig_ctx)));
  arch_keys(w, s);
  if (!s.chat_template.empty()) w.set("tokenizer.chat_template", Value::string(s.chat_template));

  if (s.tokenizer == "llama") {
    spm_vocab(w, s);
  } else if (s.tokenizer == "gpt2") {
    if (s.n_vocab < 257) fail<InvalidArgument>("synthetic model: a gpt2 vocabulary needs 257 tokens");
    gpt2_vocab(w, s, s.arch.starts_with("qwen") ? "qwen2" : "llama-bpe");
  } else {
    fail<InvalidArgument>("synthetic model: unknown tokenizer '{}'", s.tokenizer);
  }
  const ModelConfig c = declared(w);

  Filler fill(s.seed);
  const int E = s.n_embd;
  const bool pre = c.pre_norms(), post = c.post_norms(), layer_norm = c.norm_kind == NormKind::Layer;
  const bool bert = s.arch == "bert";  // every bias
  // Embeddings uniform in [-1, 1]: rows of unit-ish size.
  add_lazy(w, fill, "token_embd.weight", {uint64_t(E), uint64_t(s.n_vocab)}, 1.0f, s.type);
  if (c.output_norm) add_norm(w, fill, "output_norm.weight", E);
  if (!s.tied_embeddings) add_matrix(w, fill, "output.weight", s.n_vocab, E, s.type);
  auto bias = [&](const std::string& name, int n) {
    w.add_f32_tensor(name, {uint64_t(n)}, fill.values(size_t(n), 0.0f, 0.5f));
  };
  if (s.n_cls_out > 0) {
    // An encoder's head is bge-reranker's: a dense layer (tanh) first, biases on both.
    const bool encoder = !c.causal;
    if (encoder) add_matrix(w, fill, "cls.weight", E, E, TensorType::F32), bias("cls.bias", E);
    add_matrix(w, fill, "cls.output.weight", s.n_cls_out, E, TensorType::F32);
    if (encoder) bias("cls.output.bias", s.n_cls_out);
  }
  // A norm's weight, and its bias where it is a LayerNorm.
  auto norm = [&](const std::string& name) {
    add_norm(w, fill, name + ".weight", E);
    if (layer_norm) bias(name + ".bias", E);
  };
  // Small beside the tokens', as trained ones are.
  if (c.token_types) w.add_f32_tensor("token_types.weight", {uint64_t(E), 2}, fill.values(size_t(E) * 2, 0.0f, 0.3f));
  if (c.position_embd) {
    w.add_f32_tensor("position_embd.weight", {uint64_t(E), uint64_t(s.n_ctx)},
                     fill.values(size_t(E) * size_t(s.n_ctx), 0.0f, 0.3f));
  }
  if (c.embd_norm) norm("token_embd_norm");
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const LayerSpec& ls = c.layers[size_t(l)];
    const int q = ls.q_dim(), kv = ls.kv_dim(), F = ls.n_ff, lhd = ls.head_dim;
    if (pre) add_norm(w, fill, p + "attn_norm.weight", E);
    if (ls.kv_source >= 0) {  // Q alone: the K/V are an earlier layer's
      add_matrix(w, fill, p + "attn_q.weight", q, E, s.type);
    } else if (ls.recurrent) {
      add_delta_net(w, fill, p, c, s.type);
    } else if (s.fused_qkv) {
      add_matrix(w, fill, p + "attn_qkv.weight", q + 2 * kv, E, s.type);
      if (s.qkv_bias) bias(p + "attn_qkv.bias", q + 2 * kv);
    } else {
      add_matrix(w, fill, p + "attn_q.weight", c.attn_output_gate ? 2 * q : q, E, s.type);
      add_matrix(w, fill, p + "attn_k.weight", kv, E, s.type);
      if (!(s.global_k_eq_v && ls.window == 0)) add_matrix(w, fill, p + "attn_v.weight", kv, E, s.type);
      if (s.qkv_bias || bert) {
        bias(p + "attn_q.bias", q);
        bias(p + "attn_k.bias", kv);
        bias(p + "attn_v.bias", kv);
      }
    }
    if (c.qk_norm != QkNorm::None && !ls.recurrent) {
      const bool whole = c.qk_norm == QkNorm::Whole;
      add_norm(w, fill, p + "attn_q_norm.weight", whole ? q : lhd);
      if (ls.kv_source < 0) add_norm(w, fill, p + "attn_k_norm.weight", whole ? kv : lhd);
    }
    if (c.attn_sinks)
      w.add_f32_tensor(p + "attn_sinks.weight", {uint64_t(s.n_head)}, fill.values(size_t(s.n_head), 0.0f, 2.0f));
    if (!c.layers[size_t(l)].recurrent) add_matrix(w, fill, p + "attn_output.weight", E, q, s.type);
    if (s.out_bias || bert) bias(p + "attn_output.bias", E);
    if (post) norm(p + c.attn_post_norm_name);
    if (pre) add_norm(w, fill, p + c.ffn_norm_name + ".weight", E);
    if (c.moe.n_expert > 0) {
      // The router as llama.cpp's quantizer leaves it: F32.
      add_matrix(w, fill, p + "ffn_gate_inp.weight", c.moe.n_expert, E, TensorType::F32);
      const TensorType xt = s.expert_type.value_or(s.type);
      if (s.fused_gate_up_exps) {
        add_matrices(w, fill, p + "ffn_gate_up_exps.weight", c.moe.n_expert, 2 * c.moe.n_ff, E, xt);
      } else {
        add_matrices(w, fill, p + "ffn_gate_exps.weight", c.moe.n_expert, c.moe.n_ff, E, xt);
        add_matrices(w, fill, p + "ffn_up_exps.weight", c.moe.n_expert, c.moe.n_ff, E, xt);
      }
      add_matrices(w, fill, p + "ffn_down_exps.weight", c.moe.n_expert, E, c.moe.n_ff, xt);
      if (c.moe.dense_beside) {  // gemma4: the router's input scale, each expert's scale, the MLP beside
        // The router reads rmsnorm(x) / sqrt(n_embd): a scale near sqrt(n_embd) gives its logits unit spread,
        // as trained routers have (near-equal logits would route on rounding).
        const float root = std::sqrt(float(E));
        w.add_f32_tensor(p + "ffn_gate_inp.scale", {uint64_t(E)}, fill.values(size_t(E), root, 0.2f * root));
        w.add_f32_tensor(p + "ffn_down_exps.scale", {uint64_t(c.moe.n_expert)},
                         fill.values(size_t(c.moe.n_expert), 1.0f, 0.5f));
        add_norm(w, fill, p + "pre_ffw_norm_2.weight", E);
        add_norm(w, fill, p + "post_ffw_norm_1.weight", E);
        add_norm(w, fill, p + "post_ffw_norm_2.weight", E);
        add_matrix(w, fill, p + "ffn_gate.weight", F, E, s.type);
        add_matrix(w, fill, p + "ffn_up.weight", F, E, s.type);
        add_matrix(w, fill, p + "ffn_down.weight", E, F, s.type);
      }
      if (const int S = c.moe.n_ff_shared; S > 0) {
        w.add_f32_tensor(p + "ffn_gate_inp_shexp.weight", {uint64_t(E)},
                         fill.values(size_t(E), 0.0f, std::sqrt(3.0f / float(E))));
        add_matrix(w, fill, p + "ffn_gate_shexp.weight", S, E, s.type);
        add_matrix(w, fill, p + "ffn_up_shexp.weight", S, E, s.type);
        add_matrix(w, fill, p + "ffn_down_shexp.weight", E, S, s.type);
      }
      if (s.expert_bias) {
        const uint64_t n = uint64_t(c.moe.n_expert), f = uint64_t(c.moe.n_ff);
        bias(p + "ffn_gate_inp.bias", c.moe.n_expert);
        w.add_f32_tensor(p + "ffn_gate_exps.bias", {f, n}, fill.values(f * n, 0.0f, 0.5f));
        w.add_f32_tensor(p + "ffn_up_exps.bias", {f, n}, fill.values(f * n, 0.0f, 0.5f));
        w.add_f32_tensor(p + "ffn_down_exps.bias", {uint64_t(E), n}, fill.values(uint64_t(E) * n, 0.0f, 0.5f));
      }
    } else if (!c.gated_ffn()) {
      add_matrix(w, fill, p + "ffn_up.weight", F, E, s.type);
      bias(p + "ffn_up.bias", F);
    } else if (c.fused_gate_up) {
      add_matrix(w, fill, p + "ffn_up.weight", 2 * F, E, s.type);
    } else {
      add_matrix(w, fill, p + "ffn_gate.weight", F, E, s.type);
      add_matrix(w, fill, p + "ffn_up.weight", F, E, s.type);
    }
    if (c.moe.n_expert == 0) add_matrix(w, fill, p + "ffn_down.weight", E, F, s.type);
    if (bert) bias(p + "ffn_down.bias", E);
    if (post) norm(p + c.ffn_post_norm_name);
    if (c.layer_output_scale) w.add_f32_tensor(p + "layer_output_scale.weight", {1}, fill.values(1, 0.75f, 0.25f));
    if (const int P = c.n_embd_per_layer; P > 0) {
      add_matrix(w, fill, p + "inp_gate.weight", P, E, s.type);
      add_matrix(w, fill, p + "proj.weight", E, P, s.type);
      add_norm(w, fill, p + "post_norm.weight", E);
    }
  }
  if (const int P = c.n_embd_per_layer; P > 0) {  // unit-ish rows, as token_embd's
    const auto pl = fill.values(size_t(s.n_vocab) * size_t(P) * size_t(c.n_layer), 0.0f, 1.0f);
    w.add_tensor("per_layer_token_embd.weight", s.type, {uint64_t(P) * uint64_t(c.n_layer), uint64_t(s.n_vocab)},
                 quantize(s.type, pl.data(), pl.size()));
    add_matrix(w, fill, "per_layer_model_proj.weight", P * c.n_layer, E, TensorType::F32);  // llama.cpp keeps it F32
    add_norm(w, fill, "per_layer_proj_norm.weight", P);
  }
  // gemma4's proportional RoPE: the global layers rotate their first quarter of pairs, 1e30 stops the rest.
  if (s.arch == "gemma4") {
    const int pairs = hd / 2;
    std::vector<float> factors(size_t(pairs), 1e30f);
    std::fill_n(factors.begin(), pairs / 4, 1.0f);
    w.add_f32_tensor("rope_freqs.weight", {uint64_t(pairs)}, factors);
  }
  // Last, so that models without them draw the same weights as before.
  const int pairs = (s.rope_dims > 0 ? s.rope_dims : hd) / 2;
  if (s.rope_freq_factors)
    w.add_f32_tensor("rope_freqs.weight", {uint64_t(pairs)}, fill.values(size_t(pairs), 4.5f, 3.5f));
  if (s.longrope) {
    w.add_f32_tensor("rope_factors_long.weight", {uint64_t(pairs)}, fill.values(size_t(pairs), 8.0f, 7.0f));
    w.add_f32_tensor("rope_factors_short.weight", {uint64_t(pairs)}, fill.values(size_t(pairs), 1.5f, 0.5f));
    w.set(a + "rope.scaling.attn_factor", Value::f32(1.19f));
  }
  return w;
}

}  // namespace pagoda
