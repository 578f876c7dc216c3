// Gemma 2 and 3: sandwich norms, GeGLU, embeddings scaled by sqrt(width),
// local (sliding-window) layers between global ones. Gemma 2 soft-caps the
// attention scores and the logits; Gemma 3 norms Q and K instead, and its
// local layers keep their own RoPE base and no scaling.
#include <cmath>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {
namespace {

void declare_gemma_block(ModelConfig& c) {
  c.norms = NormPlacement::Sandwich;
  c.act = Activation::GeluTanh;
  c.embed_scale = std::sqrt(float(c.n_embd));
}

// The files hold no query scale. Google's configs scale by 1/sqrt(width /
// heads) in the 27B models and by 1/sqrt(head size) in the others; the layer
// count is what tells the 27B models apart (llama.cpp decides the same way).
float gemma_query_scale(const ModelConfig& c, int layers_of_27b) {
  const int d = c.n_layer == layers_of_27b ? c.n_embd / c.n_head : c.head_dim;
  return 1.0f / std::sqrt(float(d));
}

int read_window(const GgufFile& f, const ModelConfig& c, uint64_t dflt) {
  const uint64_t w = read_u64(f, c, "attention.sliding_window", dflt);
  if (w > (uint64_t(1) << 24))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "attention.sliding_window"), w);
  return int(w);
}

}  // namespace

void declare_gemma2(const GgufFile& f, ModelConfig& c) {
  declare_gemma_block(c);
  c.attn_scale = gemma_query_scale(c, 46);
  c.attn_softcap = float(read_f64(f, c, "attn_logit_softcapping", 50.0));
  c.final_softcap = float(read_f64(f, c, "final_logit_softcapping", 30.0));
  const int window = read_window(f, c, 4096);
  const float local_base = float(read_f64(f, c, "rope.freq_base_swa", c.rope.base));
  const std::vector<bool> local = sliding_layers(f, c, 2);
  for (size_t l = 0; l < local.size(); ++l)
    if (local[l]) {
      c.layers[l].window = window;
      c.layers[l].rope.base = local_base;
    }
}

void declare_gemma3(const GgufFile& f, ModelConfig& c) {
  declare_gemma_block(c);
  c.qk_norm = QkNorm::PerHead;
  c.attn_scale = gemma_query_scale(c, 62);
  c.final_softcap = float(read_f64(f, c, "final_logit_softcapping", 0.0));
  const int window = read_window(f, c, 0);
  if (window == 0) return;  // no key: every layer global
  const float local_base = float(read_f64(f, c, "rope.freq_base_swa", 10000.0));
  const std::vector<bool> local = sliding_layers(f, c, 6);
  for (size_t l = 0; l < local.size(); ++l)
    if (local[l]) {
      c.layers[l].window = window;
      c.layers[l].rope.base = local_base;
      c.layers[l].rope.scaling = RopeScaling::None;  // scaling is for the global layers only
    }
}

}  // namespace pagoda
