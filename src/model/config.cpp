#include "model/config.h"

#include "gguf/file.h"
#include "util/error.h"

namespace pagoda {
namespace {

int positive_int(const GgufFile& f, const std::string& key, std::optional<uint64_t> dflt = std::nullopt) {
  const uint64_t v = f.get_u64(key, dflt);
  if (v == 0 || v > (uint64_t(1) << 24)) fail<FormatError>("{}: {} = {} is out of range", f.source(), key, v);
  return int(v);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  if (c.arch != "llama")
    fail<Unsupported>("{}: architecture '{}' is not supported (supported: llama)", f.source(), c.arch);
  c.name = f.get_string("general.name", "");
  const std::string a = c.arch + ".";
  c.n_embd = positive_int(f, a + "embedding_length");
  c.n_layer = positive_int(f, a + "block_count");
  c.n_ff = positive_int(f, a + "feed_forward_length");
  c.n_head = positive_int(f, a + "attention.head_count");
  c.n_head_kv = positive_int(f, a + "attention.head_count_kv", uint64_t(c.n_head));
  if (c.n_head % c.n_head_kv != 0)
    fail<FormatError>("{}: {} heads cannot be grouped over {} KV heads", f.source(), c.n_head, c.n_head_kv);
  if (c.n_embd % c.n_head != 0 && !f.find(a + "attention.key_length"))
    fail<FormatError>("{}: width {} is not a multiple of {} heads", f.source(), c.n_embd, c.n_head);
  c.head_dim = positive_int(f, a + "attention.key_length", uint64_t(c.n_embd / c.n_head));
  if (c.head_dim > 512) fail<Unsupported>("{}: head size {} is larger than 512", f.source(), c.head_dim);
  if (positive_int(f, a + "attention.value_length", uint64_t(c.head_dim)) != c.head_dim)
    fail<Unsupported>("{}: different key and value head sizes are not supported", f.source());
  c.n_ctx_train = positive_int(f, a + "context_length", 2048);
  c.rms_eps = float(f.get_f64(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_freq_base = float(f.get_f64(a + "rope.freq_base", 10000.0));
  c.rope_dims = positive_int(f, a + "rope.dimension_count", uint64_t(c.head_dim));
  if (c.rope_dims > c.head_dim || c.rope_dims % 2)
    fail<FormatError>("{}: rope.dimension_count {} does not fit head size {}", f.source(), c.rope_dims, c.head_dim);
  if (!(c.rms_eps > 0) || !(c.rope_freq_base > 0))
    fail<FormatError>("{}: epsilon and RoPE base must be positive", f.source());
  if (f.find(a + "rope.scaling.type") && f.get_string(a + "rope.scaling.type") != "none")
    fail<Unsupported>("{}: RoPE scaling '{}' is not supported yet", f.source(), f.get_string(a + "rope.scaling.type"));
  return c;
}

}  // namespace pagoda
