#include "model/synthetic.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "quant/rows.h"
#include "util/error.h"

namespace pagoda {
namespace {

class Filler {
 public:
  explicit Filler(uint64_t seed) : rng_(seed) {}
  // Uniform in [center - spread, center + spread].
  std::vector<float> values(size_t n, float center, float spread) {
    std::uniform_real_distribution<float> d(-spread, spread);
    std::vector<float> v(n);
    for (auto& x : v) x = center + d(rng_);
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

void add_matrix(GgufWriter& w, Filler& fill, const std::string& name, int rows, int cols, TensorType type) {
  // Scaled so activations keep unit size through the layers.
  const auto values = fill.values(size_t(rows) * cols, 0.0f, std::sqrt(3.0f / float(cols)));
  w.add_tensor(name, type, {uint64_t(cols), uint64_t(rows)}, quantize(type, values.data(), values.size()));
}

void add_norm(GgufWriter& w, Filler& fill, const std::string& name, int n) {
  w.add_f32_tensor(name, {uint64_t(n)}, fill.values(size_t(n), 1.0f, 0.2f));
}

}  // namespace

GgufWriter synthetic_llama(const SyntheticModelSpec& s) {
  if (s.n_vocab < 3 || s.n_head % s.n_head_kv != 0 || s.n_embd % s.n_head != 0)
    fail<InvalidArgument>("synthetic model: inconsistent shape");
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  w.set("general.name", Value::string("synthetic-llama"));
  w.set("llama.context_length", Value::u32(uint32_t(s.n_ctx)));
  w.set("llama.embedding_length", Value::u32(uint32_t(s.n_embd)));
  w.set("llama.block_count", Value::u32(uint32_t(s.n_layer)));
  w.set("llama.feed_forward_length", Value::u32(uint32_t(s.n_ff)));
  w.set("llama.attention.head_count", Value::u32(uint32_t(s.n_head)));
  w.set("llama.attention.head_count_kv", Value::u32(uint32_t(s.n_head_kv)));
  w.set("llama.attention.layer_norm_rms_epsilon", Value::f32(s.rms_eps));
  w.set("llama.rope.freq_base", Value::f32(s.rope_freq_base));
  w.set("llama.rope.dimension_count", Value::u32(uint32_t(s.n_embd / s.n_head)));

  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256 && int(tokens.size()) < s.n_vocab; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  while (int(tokens.size()) < s.n_vocab) {
    tokens.push_back(fmt::format("\u2581w{}", tokens.size()));
    types.push_back(1);
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

  Filler fill(s.seed);
  const int hd = s.n_embd / s.n_head, q = s.n_head * hd, kv = s.n_head_kv * hd;
  // Embeddings uniform in [-1, 1]: rows of unit-ish size.
  const auto emb = fill.values(size_t(s.n_vocab) * s.n_embd, 0.0f, 1.0f);
  w.add_tensor("token_embd.weight", s.type, {uint64_t(s.n_embd), uint64_t(s.n_vocab)},
               quantize(s.type, emb.data(), emb.size()));
  add_norm(w, fill, "output_norm.weight", s.n_embd);
  if (!s.tied_embeddings) add_matrix(w, fill, "output.weight", s.n_vocab, s.n_embd, s.type);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    add_norm(w, fill, p + "attn_norm.weight", s.n_embd);
    add_matrix(w, fill, p + "attn_q.weight", q, s.n_embd, s.type);
    add_matrix(w, fill, p + "attn_k.weight", kv, s.n_embd, s.type);
    add_matrix(w, fill, p + "attn_v.weight", kv, s.n_embd, s.type);
    add_matrix(w, fill, p + "attn_output.weight", s.n_embd, q, s.type);
    add_norm(w, fill, p + "ffn_norm.weight", s.n_embd);
    add_matrix(w, fill, p + "ffn_gate.weight", s.n_ff, s.n_embd, s.type);
    add_matrix(w, fill, p + "ffn_up.weight", s.n_ff, s.n_embd, s.type);
    add_matrix(w, fill, p + "ffn_down.weight", s.n_embd, s.n_ff, s.type);
  }
  return w;
}

}  // namespace pagoda
