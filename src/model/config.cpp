#include "model/config.h"

#include <algorithm>
#include <cmath>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr int kMaxLayers = 4096;
constexpr int kMaxExperts = 512;  // llama.cpp's bound too; the largest models route over 384

const Arch& find_arch(const GgufFile& f, const std::string& name) {
  for (const Arch& a : architectures())
    if (a.name == name) return a;
  fail<Unsupported>("{}: architecture '{}' is not supported (supported: {})", f.source(), name,
                    supported_architectures());
}

int positive_int(const GgufFile& f, const std::string& key, std::optional<uint64_t> dflt = std::nullopt) {
  const uint64_t v = f.get_u64(key, dflt);
  if (v == 0 || v > (uint64_t(1) << 24)) fail<FormatError>("{}: {} = {} is out of range", f.source(), key, v);
  return int(v);
}

// {arch}.rope.scaling.*: the type (llama.cpp's default is linear), and its
// factor (also under the older rope.scale_linear key; 0 means unset). Llama
// 3.1's scaling is not a key but the rope_freqs.weight tensor (see weights.h).
void read_rope_scaling(const GgufFile& f, const std::string& a, int n_ctx_train, RopeSpec& r) {
  r.yarn_orig_ctx = positive_int(f, a + "rope.scaling.original_context_length", uint64_t(n_ctx_train));
  const std::string type = f.get_string(a + "rope.scaling.type", "linear");
  if (type == "none") return;
  if (type != "linear" && type != "yarn")
    fail<Unsupported>("{}: RoPE scaling '{}' is not supported (supported: none, linear, yarn)", f.source(), type);
  double factor = 1.0;
  if (f.find(a + "rope.scaling.factor"))
    factor = f.get_f64(a + "rope.scaling.factor");
  else if (f.find(a + "rope.scale_linear"))
    factor = f.get_f64(a + "rope.scale_linear");
  if (factor == 0) factor = 1.0;
  if (!(factor > 0) || factor > 1e6)
    fail<FormatError>("{}: RoPE scaling factor {} is out of range", f.source(), factor);
  r.factor = float(factor);
  r.scaling = type == "yarn" ? RopeScaling::Yarn : factor == 1.0 ? RopeScaling::None : RopeScaling::Linear;
  r.attn_factor = float(f.get_f64(a + "rope.scaling.attn_factor", 1.0));
  if (!(r.attn_factor > 0) || !std::isfinite(r.attn_factor))
    fail<FormatError>("{}: rope.scaling.attn_factor {} is out of range", f.source(), r.attn_factor);
}

// A count per layer: the key's one number for every layer, or its array of
// n_layer numbers; `dflt` where the file has neither (empty: required).
std::vector<int> per_layer(const GgufFile& f, const std::string& key, int n_layer, const std::vector<int>& dflt) {
  const Value* v = f.find(key);
  if (!v && !dflt.empty()) return dflt;
  if (v && v->type() == ValueType::ARRAY) {
    const auto& items = v->as_array(key);
    if (items.size() != size_t(n_layer))
      fail<FormatError>("{}: {} has {} entries for {} layers", f.source(), key, items.size(), n_layer);
    std::vector<int> out;
    for (const Value& item : items) {
      const uint64_t n = item.as_u64(key);
      if (n == 0 || n > (uint64_t(1) << 24)) fail<FormatError>("{}: {} holds {}, out of range", f.source(), key, n);
      out.push_back(int(n));
    }
    return out;
  }
  return std::vector<int>(size_t(n_layer), positive_int(f, key));
}

// What every architecture states the same way: the shape, epsilon and RoPE.
ModelConfig read_common(const GgufFile& f, const Arch& arch) {
  ModelConfig c;
  c.arch = std::string(arch.name);
  c.rope.layout = arch.rope_layout;
  c.name = f.get_string("general.name", "");
  const std::string a = c.arch + ".";
  c.n_embd = positive_int(f, a + "embedding_length");
  c.n_layer = positive_int(f, a + "block_count");
  if (c.n_layer > kMaxLayers)  // the largest models have ~130; a bound for what is allocated per layer
    fail<FormatError>("{}: {} = {} is more than {} layers", f.source(), a + "block_count", c.n_layer, kMaxLayers);
  // Head counts and FFN widths: one number, or one per layer (gemma4's KV heads, its double-wide MLPs).
  const std::vector<int> ffs = per_layer(f, a + "feed_forward_length", c.n_layer, {});
  const std::vector<int> heads = per_layer(f, a + "attention.head_count", c.n_layer, {});
  const std::vector<int> kv_heads = per_layer(f, a + "attention.head_count_kv", c.n_layer, heads);
  c.n_ff = ffs[0], c.n_head = heads[0], c.n_head_kv = kv_heads[0];
  for (size_t l = 0; l < heads.size(); ++l)
    if (heads[l] % kv_heads[l] != 0)
      fail<FormatError>("{}: {} heads cannot be grouped over {} KV heads", f.source(), heads[l], kv_heads[l]);
  if (c.n_embd % c.n_head != 0 && !f.find(a + "attention.key_length"))
    fail<FormatError>("{}: width {} is not a multiple of {} heads", f.source(), c.n_embd, c.n_head);
  c.head_dim = positive_int(f, a + "attention.key_length", uint64_t(c.n_embd / c.n_head));
  if (c.head_dim > 512) fail<Unsupported>("{}: head size {} is larger than 512", f.source(), c.head_dim);
  if (positive_int(f, a + "attention.value_length", uint64_t(c.head_dim)) != c.head_dim)
    fail<Unsupported>("{}: different key and value head sizes are not supported", f.source());
  c.n_ctx_train = positive_int(f, a + "context_length", 2048);
  c.rms_eps = float(f.get_f64(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope.base = float(f.get_f64(a + "rope.freq_base", 10000.0));
  c.rope.dims = positive_int(f, a + "rope.dimension_count", uint64_t(c.head_dim));
  if (c.rope.dims > c.head_dim || c.rope.dims % 2)
    fail<FormatError>("{}: rope.dimension_count {} does not fit head size {}", f.source(), c.rope.dims, c.head_dim);
  if (!(c.rms_eps > 0) || !(c.rope.base > 0))
    fail<FormatError>("{}: epsilon and RoPE base must be positive", f.source());
  read_rope_scaling(f, a, c.n_ctx_train, c.rope);
  // Experts: any architecture may have them (Mixtral is a llama); a declaration adjusts the routing.
  if (const uint64_t n = f.get_u64(a + "expert_count", uint64_t(0)); n > 0) {
    if (n > kMaxExperts) fail<FormatError>("{}: {}expert_count = {} is more than {}", f.source(), a, n, kMaxExperts);
    c.moe.n_expert = int(n);
    c.moe.n_used = positive_int(f, a + "expert_used_count");
    c.moe.n_ff = positive_int(f, a + "expert_feed_forward_length", uint64_t(c.n_ff));
  }
  if (const uint64_t p = f.get_u64(a + "pooling_type", uint64_t(0)); p <= uint64_t(Pooling::rank))
    c.pooling = Pooling(p);
  else
    fail<FormatError>("{}: {}pooling_type = {} is not a pooling type (0-4)", f.source(), a, p);
  c.causal = f.get_bool(a + "attention.causal", true);  // llama.cpp's default for every architecture
  // Per-pair factors: Llama 3.1's rope_freqs, or LongRoPE's long/short pair (weights.h picks one).
  c.rope.freq_factors = f.find_tensor("rope_freqs.weight") || f.find_tensor("rope_factors_long.weight");
  for (int l = 0; l < c.n_layer; ++l)
    c.layers.push_back(LayerSpec{.window = 0,
                                 .rope = c.rope,
                                 .n_head = heads[size_t(l)],
                                 .n_head_kv = kv_heads[size_t(l)],
                                 .head_dim = c.head_dim,
                                 .n_ff = ffs[size_t(l)]});
  return c;
}

void check_declared(const GgufFile& f, const ModelConfig& c) {
  if (c.layers.size() != size_t(c.n_layer))
    fail<FormatError>("{}: {} layer specs for {} layers", f.source(), c.layers.size(), c.n_layer);
  if (!(c.attn_scale > 0) || !std::isfinite(c.attn_scale) || c.attn_softcap < 0 || c.final_softcap < 0 ||
      !(c.embed_scale > 0) || !(c.residual_scale > 0) || !(c.logit_scale > 0))
    fail<FormatError>("{}: the scales and soft-caps must be positive", f.source());
  if (c.moe.n_expert > 0 && c.moe.n_used > c.moe.n_expert)
    fail<FormatError>("{}: {}.expert_used_count = {} is more than the {} experts", f.source(), c.arch, c.moe.n_used,
                      c.moe.n_expert);
  if (c.moe.n_expert > 0 && (c.moe.n_ff <= 0 || !(c.moe.scale > 0) || !std::isfinite(c.moe.scale)))
    fail<FormatError>("{}: the experts' width and weight scale must be positive", f.source());
  for (int i = 0; i < c.n_layer; ++i) {
    const LayerSpec& l = c.layers[size_t(i)];
    if (l.window < 0 || !(l.rope.base > 0))
      fail<FormatError>("{}: a layer's window or RoPE base is invalid", f.source());
    if (l.n_head <= 0 || l.n_head_kv <= 0 || l.n_head % l.n_head_kv != 0 || l.head_dim <= 0 || l.n_ff <= 0)
      fail<FormatError>("{}: layer {} has {} heads over {} KV heads of {}, FFN {}", f.source(), i, l.n_head,
                        l.n_head_kv, l.head_dim, l.n_ff);
    if (l.head_dim > 512) fail<Unsupported>("{}: layer {} has heads of {}, more than 512", f.source(), i, l.head_dim);
    if (l.rope.dims > l.head_dim || l.rope.dims % 2)
      fail<FormatError>("{}: layer {} rotates {} dims of heads of {}", f.source(), i, l.rope.dims, l.head_dim);
    // A shared layer reads K/V an earlier layer of its kind wrote in the same pass.
    if (l.kv_source >= 0) {
      const LayerSpec* src = l.kv_source < i ? &c.layers[size_t(l.kv_source)] : nullptr;
      if (!src || !src->has_kv() || l.recurrent || src->window != l.window || src->kv_dim() != l.kv_dim() ||
          src->head_dim != l.head_dim)
        fail<FormatError>("{}: layer {} cannot read the K/V of layer {}", f.source(), i, l.kv_source);
    }
    // A window or a state reads a causal past; attending both ways has neither.
    if (!c.causal && (l.window > 0 || l.recurrent))
      fail<Unsupported>("{}: non-causal attention with sliding windows or recurrent layers", f.source());
  }
}

}  // namespace

int ModelConfig::max_q_dim() const {
  int m = q_dim();
  for (const LayerSpec& l : layers) m = std::max(m, l.q_dim());
  return m;
}

int ModelConfig::max_kv_dim() const {
  int m = kv_dim();
  for (const LayerSpec& l : layers) m = std::max(m, l.kv_dim());
  return m;
}

int ModelConfig::max_n_ff() const {
  int m = n_ff;
  for (const LayerSpec& l : layers) m = std::max(m, l.n_ff);
  return m;
}

size_t ModelConfig::kv_bytes_per_token() const {
  size_t floats = 0;
  for (const LayerSpec& l : layers) floats += l.has_kv() ? size_t(2) * size_t(l.kv_dim()) : 0;
  return floats * sizeof(float);
}

const char* pooling_name(Pooling pooling) {
  constexpr const char* kNames[] = {"none", "mean", "cls", "last", "rank"};
  return kNames[int(pooling)];
}

Pooling pooling_from_name(std::string_view name) {
  for (int p = 0; p <= int(Pooling::rank); ++p)
    if (name == pooling_name(Pooling(p))) return Pooling(p);
  fail<InvalidArgument>("unknown pooling '{}': none, mean, cls, last or rank", name);
}

const char* rope_layout_name(RopeLayout layout) { return layout == RopeLayout::NeoX ? "neox" : "interleaved"; }

const char* rope_scaling_name(RopeScaling scaling) {
  return scaling == RopeScaling::Yarn ? "yarn" : scaling == RopeScaling::Linear ? "linear" : "none";
}

const char* norm_placement_name(NormPlacement placement) {
  switch (placement) {
    case NormPlacement::Pre: return "pre";
    case NormPlacement::Post: return "post";
    case NormPlacement::Sandwich: return "sandwich";
    case NormPlacement::PostAdd: return "post-add";
  }
  return "?";
}

const char* activation_name(Activation act) {
  switch (act) {
    case Activation::SiLU: return "SwiGLU";
    case Activation::GeluTanh: return "GeGLU";
    case Activation::SwigluOai: return "clamped SwiGLU";
    case Activation::Gelu: return "GELU";
  }
  return "?";
}

const char* expert_gating_name(ExpertGating gating) {
  return gating == ExpertGating::TopKSoftmax ? "top-k, softmax" : "softmax, top-k";
}

std::string supported_architectures() {
  std::string names;
  for (const Arch& a : architectures()) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  const std::string arch = f.get_string("general.architecture");
  const Arch& declaration = find_arch(f, arch);
  ModelConfig c = read_common(f, declaration);
  if (c.moe.n_expert > 0 && !declaration.experts)
    fail<Unsupported>("{}: '{}' with experts (a mixture of experts) is not supported", f.source(), c.arch);
  declaration.declare(f, c);
  if (c.attn_scale == 0) c.attn_scale = 1.0f / std::sqrt(float(c.head_dim));
  check_declared(f, c);
  return c;
}

}  // namespace pagoda
