// Qwen3.5 / Qwen3.6 (and their mixture-of-experts versions): hybrids of
// Gated DeltaNet linear-attention layers (three of every four by default)
// and gated full attention, Qwen3's per-head Q/K norms, the pre-FFN norm
// under post_attention_norm, and interleaved M-RoPE, which on text (every
// section at the token's position) is NeoX RoPE over rope.dimension_count dims.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {
namespace {

int ssm_int(const GgufFile& f, const ModelConfig& c, std::string_view key) {
  const uint64_t v = f.get_u64(arch_key(c, key));
  if (v == 0 || v > 65536) fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, key), v);
  return int(v);
}

// Which layers are recurrent: the array attention.recurrent_layers, else all
// but the last of each full_attention_interval (4 by default).
std::vector<bool> recurrent_layers(const GgufFile& f, const ModelConfig& c) {
  const std::string key = arch_key(c, "attention.recurrent_layers");
  std::vector<bool> recurrent(size_t(c.n_layer));
  if (const Value* v = f.find(key)) {
    const auto& items = v->as_array(key);
    if (items.size() != size_t(c.n_layer))
      fail<FormatError>("{}: {} has {} entries for {} layers", f.source(), key, items.size(), c.n_layer);
    for (size_t l = 0; l < items.size(); ++l) recurrent[l] = items[l].as_bool(key);
    return recurrent;
  }
  const uint64_t interval = read_u64(f, c, "full_attention_interval", 4);
  if (interval == 0 || interval > uint64_t(c.n_layer))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "full_attention_interval"), interval);
  for (size_t l = 0; l < recurrent.size(); ++l) recurrent[l] = (l + 1) % interval != 0;
  return recurrent;
}

// Text positions give the first three M-RoPE sections the token's position
// and the fourth 0; interleaved, pair i takes section i % 3 while that
// section has pairs left (llama.cpp's IMROPE). A file whose sections leave a
// pair to the fourth would rotate it by 0: not NeoX, refused by name.
void check_rope_sections(const GgufFile& f, const ModelConfig& c) {
  const std::string key = arch_key(c, "rope.dimension_sections");
  const Value* v = f.find(key);
  if (!v) fail<FormatError>("{}: a {} file needs {}", f.source(), c.arch, key);
  const auto& items = v->as_array(key);
  if (items.size() != 4) fail<FormatError>("{}: {} has {} entries, not 4", f.source(), key, items.size());
  int64_t s[4], total = 0;
  for (int i = 0; i < 4; ++i) total += s[i] = items[size_t(i)].as_i64(key);
  if (total <= 0 || s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0)
    fail<FormatError>("{}: {} = [{}, {}, {}, {}] is invalid", f.source(), key, s[0], s[1], s[2], s[3]);
  for (int pair = 0; pair < c.rope.dims / 2; ++pair) {
    const int64_t sector = pair % total, section = sector % 3;
    if (sector >= 3 * s[section])
      fail<Unsupported>("{}: {} = [{}, {}, {}, {}] leaves RoPE pair {} to the fourth section (not text-only M-RoPE)",
                        f.source(), key, s[0], s[1], s[2], s[3], pair);
  }
}

}  // namespace

void declare_qwen35(const GgufFile& f, ModelConfig& c) {
  c.qk_norm = QkNorm::PerHead;
  c.attn_output_gate = true;
  c.ffn_norm_name = "post_attention_norm";
  check_rope_sections(f, c);
  DeltaNetSpec& d = c.delta_net;
  d.conv_kernel = ssm_int(f, c, "ssm.conv_kernel");
  d.head_k_dim = ssm_int(f, c, "ssm.state_size");
  d.n_k_heads = ssm_int(f, c, "ssm.group_count");
  d.n_v_heads = ssm_int(f, c, "ssm.time_step_rank");
  const int inner = ssm_int(f, c, "ssm.inner_size");
  if (inner % d.n_v_heads != 0 || d.n_v_heads % d.n_k_heads != 0)
    fail<FormatError>("{}: ssm.inner_size {} over {} value heads reading {} key heads does not divide", f.source(),
                      inner, d.n_v_heads, d.n_k_heads);
  d.head_v_dim = inner / d.n_v_heads;
  if (d.head_v_dim != d.head_k_dim)  // llama.cpp requires it too
    fail<Unsupported>("{}: DeltaNet value heads of {} and key heads of {} differ", f.source(), d.head_v_dim,
                      d.head_k_dim);
  if (d.conv_kernel < 2 || d.conv_kernel > 16)
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "ssm.conv_kernel"), d.conv_kernel);
  const std::vector<bool> recurrent = recurrent_layers(f, c);
  for (size_t l = 0; l < recurrent.size(); ++l) c.layers[l].recurrent = recurrent[l];
}

void declare_qwen35moe(const GgufFile& f, ModelConfig& c) {
  if (c.moe.n_expert == 0) fail<FormatError>("{}: a qwen35moe file needs {}", f.source(), arch_key(c, "expert_count"));
  declare_qwen35(f, c);
  const uint64_t shared = read_u64(f, c, "expert_shared_feed_forward_length", uint64_t(c.n_ff));
  if (shared == 0 || shared > (uint64_t(1) << 24))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "expert_shared_feed_forward_length"),
                      shared);
  c.moe.n_ff_shared = int(shared);
}

}  // namespace pagoda
