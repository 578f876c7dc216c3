// BERT encoders (bge, e5, all-MiniLM): learned absolute positions and token
// type 0 added to the token embeddings, then a LayerNorm; post-norm blocks,
// x = LN(x + attn(x)), x = LN(x + gelu_ffn(x)), with LayerNorms and
// biases throughout; no RoPE, no output norm. Attention is non-causal as the
// files say ({arch}.attention.causal = false); the output rows are the last
// hidden states, pooled as {arch}.pooling_type says (cls for bge).
#include <cmath>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

void declare_bert(const GgufFile& f, ModelConfig& c) {
  const double eps = f.get_f64(arch_key(c, "attention.layer_norm_epsilon"));  // the converter always writes it
  if (!(eps > 0) || !std::isfinite(eps))
    fail<FormatError>("{}: {} = {} must be positive", f.source(), arch_key(c, "attention.layer_norm_epsilon"), eps);
  c.rms_eps = float(eps);
  c.position_embd = true;
  c.embd_norm = true;
  c.norms = NormPlacement::PostAdd;
  c.norm_kind = NormKind::Layer;
  c.attn_post_norm_name = "attn_output_norm";
  c.ffn_post_norm_name = "layer_output_norm";
  c.output_norm = false;
  c.act = Activation::Gelu;
  c.rope.enabled = false;
  for (LayerSpec& l : c.layers) l.rope.enabled = false;
}

}  // namespace pagoda
