// The llama block itself, and the architectures that differ from it only in scales or RoPE.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

// The block every default in config.h describes; Mixtral's files carry
// experts under this name (config.h MoeSpec's defaults are its routing).
void declare_llama(const GgufFile&, ModelConfig&) {}

// Granite: llama with four scales (embedding, residual, attention, logits; 0 in a file means unset).
void declare_granite(const GgufFile& f, ModelConfig& c) {
  declare_llama(f, c);
  auto scale = [&](std::string_view key, double dflt) {
    const double v = read_f64(f, c, key, dflt);
    return v == 0 ? dflt : v;
  };
  c.embed_scale = float(scale("embedding_scale", 1.0));
  c.residual_scale = float(scale("residual_scale", 1.0));
  c.attn_scale = float(scale("attention.scale", 0.0));
  const double logit_scale = f.get_f64(arch_key(c, "logit_scale"));  // granite files always state it
  if (!(logit_scale > 0)) fail<FormatError>("{}: {} must be positive", f.source(), arch_key(c, "logit_scale"));
  c.logit_scale = float(1.0 / logit_scale);  // the key divides the logits
}

// SmolLM3: llama whose every 4th layer attends without positions (NoPE).
void declare_smollm3(const GgufFile&, ModelConfig& c) {
  for (int l = 0; l < c.n_layer; ++l) c.layers[size_t(l)].rope.enabled = (l + 1) % 4 != 0;
}

// Mistral 3 (Ministral): llama with YaRN read the way its converter writes
// it (betas, a log multiplier), and the query temperature by position.
void declare_mistral3(const GgufFile& f, ModelConfig& c) {
  declare_llama(f, c);
  auto yarn = [&](RopeSpec& r) {
    r.yarn_beta_fast = float(read_f64(f, c, "rope.scaling.yarn_beta_fast", r.yarn_beta_fast));
    r.yarn_beta_slow = float(read_f64(f, c, "rope.scaling.yarn_beta_slow", r.yarn_beta_slow));
    r.yarn_log_mul = float(read_f64(f, c, "rope.scaling.yarn_log_multiplier", r.yarn_log_mul));
  };
  yarn(c.rope);
  for (LayerSpec& l : c.layers) yarn(l.rope);
  c.q_temperature = float(read_f64(f, c, "attention.temperature_scale", 0.0));
  c.q_temperature_floor = c.rope.yarn_orig_ctx;
}

}  // namespace pagoda
