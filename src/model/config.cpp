#include "model/config.h"

#include <string_view>

#include "gguf/file.h"
#include "util/error.h"

namespace pagoda {
namespace {

// What distinguishes the supported architectures. Everything else (keys,
// tensor names, the block itself) is shared. Q/K/V biases are accepted on
// any architecture when the file has them (some Llama finetunes do).
struct ArchInfo {
  std::string_view name;
  RopeLayout rope_layout;
  bool qkv_bias_required;
};

constexpr ArchInfo kArchs[] = {
    {"llama", RopeLayout::Interleaved, false},  // also Mistral, TinyLlama, SmolLM (written as llama)
    {"qwen2", RopeLayout::NeoX, true},
};

const ArchInfo& arch_info(const GgufFile& f, const std::string& arch) {
  for (const ArchInfo& a : kArchs)
    if (a.name == arch) return a;
  fail<Unsupported>("{}: architecture '{}' is not supported (supported: llama, qwen2)", f.source(), arch);
}

int positive_int(const GgufFile& f, const std::string& key, std::optional<uint64_t> dflt = std::nullopt) {
  const uint64_t v = f.get_u64(key, dflt);
  if (v == 0 || v > (uint64_t(1) << 24)) fail<FormatError>("{}: {} = {} is out of range", f.source(), key, v);
  return int(v);
}

// {arch}.rope.scaling.*: none, or linear with a factor (llama.cpp also reads
// the factor from the older rope.scale_linear key). Llama 3.1's scaling is
// not a key but the rope_freqs.weight tensor (see weights.h).
float read_rope_linear_factor(const GgufFile& f, const std::string& a) {
  const std::string type = f.get_string(a + "rope.scaling.type", "linear");
  if (type == "none") return 1.0f;
  if (type != "linear")
    fail<Unsupported>("{}: RoPE scaling '{}' is not supported (supported: none, linear)", f.source(), type);
  double factor = 1.0;
  if (f.find(a + "rope.scaling.factor"))
    factor = f.get_f64(a + "rope.scaling.factor");
  else if (f.find(a + "rope.scale_linear"))
    factor = f.get_f64(a + "rope.scale_linear");
  if (factor == 0) return 1.0f;  // llama.cpp's "unset"
  if (!(factor > 0) || factor > 1e6)
    fail<FormatError>("{}: RoPE scaling factor {} is out of range", f.source(), factor);
  return float(factor);
}

}  // namespace

const char* rope_layout_name(RopeLayout layout) { return layout == RopeLayout::NeoX ? "neox" : "interleaved"; }

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const ArchInfo& info = arch_info(f, c.arch);
  c.rope_layout = info.rope_layout;
  c.qkv_bias_required = info.qkv_bias_required;
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
  c.rope_linear_factor = read_rope_linear_factor(f, a);
  return c;
}

}  // namespace pagoda
