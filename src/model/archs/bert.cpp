// BERT encoders (bge, e5, all-MiniLM): learned absolute positions and token
// type 0 added to the token embeddings, then a LayerNorm; post-norm blocks,
// x = LN(x + attn(x)), x = LN(x + gelu_ffn(x)), with LayerNorms and
// biases throughout; no RoPE, no output norm. Attention is non-causal as the
// files say ({arch}.attention.causal = false); the output rows are the last
// hidden states, pooled as {arch}.pooling_type says (cls for bge).
// nomic-bert (nomic-embed-text v1/v1.5): the same block with NeoX RoPE in
// place of position embeddings, a fused attn_qkv and a SwiGLU FFN, no biases.
#include <cmath>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

namespace {

// What both encoders share: the embedding norm, post-add LayerNorms, no output norm.
void declare_encoder(const GgufFile& f, ModelConfig& c) {
  const double eps = f.get_f64(arch_key(c, "attention.layer_norm_epsilon"));  // the converter always writes it
  if (!(eps > 0) || !std::isfinite(eps))
    fail<FormatError>("{}: {} = {} must be positive", f.source(), arch_key(c, "attention.layer_norm_epsilon"), eps);
  c.rms_eps = float(eps);
  c.token_types = true;
  c.embd_norm = true;
  c.norms = NormPlacement::PostAdd;
  c.norm_kind = NormKind::Layer;
  c.attn_post_norm_name = "attn_output_norm";
  c.ffn_post_norm_name = "layer_output_norm";
  c.output_norm = false;
}

}  // namespace

void declare_bert(const GgufFile& f, ModelConfig& c) {
  declare_encoder(f, c);
  c.position_embd = true;
  c.act = Activation::Gelu;
  c.rope.enabled = false;
  for (LayerSpec& l : c.layers) l.rope.enabled = false;
}

void declare_nomic_bert(const GgufFile& f, ModelConfig& c) {
  declare_encoder(f, c);  // SwiGLU and RoPE: the defaults
}

}  // namespace pagoda
