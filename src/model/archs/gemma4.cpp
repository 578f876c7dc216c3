// Gemma 4 (E2B, E4B, 31B; the 26B-A4B with experts): Gemma 3's block with
// V RMS-normed too, an attention scale of 1 (the Q/K norms take its place),
// sliding layers with heads of their own size and RoPE base, global layers
// with "proportional" RoPE (rope_freqs.weight leaves most pairs unrotated),
// per-layer inputs (E2B/E4B) and the last layers reading an earlier layer's
// K/V instead of keeping their own (model/config.h).
#include <cmath>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {
namespace {

// A head size from the file against the tensors that show it: a key that
// contradicts the tensors is named here rather than as a tensor's odd shape.
void check_head_size(const GgufFile& f, const ModelConfig& c, int layer, const char* key, int head_dim) {
  const std::string name = "blk." + std::to_string(layer) + ".attn_q_norm.weight";
  const TensorInfo* t = f.find_tensor(name);
  if (t && (t->shape.empty() || t->shape[0] != uint64_t(head_dim)))
    fail<FormatError>("{}: {} = {} but {} has {} entries", f.source(), arch_key(c, key), head_dim, name,
                      t->shape.empty() ? 0 : t->shape[0]);
}

// The last `shared` layers keep no K/V: as llama.cpp, a sliding one reads the
// K/V of the second-last layer that keeps its own, a global one the last
// (Google's checkpoints end their KV layers on a sliding then a global one).
void share_kv(const GgufFile& f, ModelConfig& c, const std::vector<bool>& sliding) {
  const std::string key = arch_key(c, "attention.shared_kv_layers");
  const uint64_t shared = read_u64(f, c, "attention.shared_kv_layers", 0);
  if (shared == 0) return;
  if (shared + 2 > uint64_t(c.n_layer))
    fail<FormatError>("{}: {} = {} leaves fewer than 2 of {} layers with their own K/V", f.source(), key, shared,
                      c.n_layer);
  const int first_shared = c.n_layer - int(shared);
  for (int l = first_shared; l < c.n_layer; ++l) {
    const int src = first_shared - (sliding[size_t(l)] ? 2 : 1);
    if (sliding[size_t(src)] != sliding[size_t(l)])
      fail<FormatError>("{}: {} = {}: {} layer {} would read the K/V of layer {}, which is {}", f.source(), key, shared,
                        sliding[size_t(l)] ? "sliding" : "global", l, src, sliding[size_t(src)] ? "sliding" : "global");
    c.layers[size_t(l)].kv_source = src;
  }
}

}  // namespace

void declare_gemma4(const GgufFile& f, ModelConfig& c) {
  c.norms = NormPlacement::Sandwich;
  c.act = Activation::GeluTanh;
  c.embed_scale = std::sqrt(float(c.n_embd));
  c.qk_norm = QkNorm::PerHead;
  c.v_norm = true;
  c.attn_scale = 1.0f;
  c.layer_output_scale = true;
  c.final_softcap = float(read_f64(f, c, "final_logit_softcapping", 0.0));
  const uint64_t per_layer = read_u64(f, c, "embedding_length_per_layer_input", 0);
  if (per_layer > (uint64_t(1) << 16))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "embedding_length_per_layer_input"),
                      per_layer);
  c.n_embd_per_layer = int(per_layer);

  // The pattern is an array in every Gemma 4 file (llama.cpp requires one).
  const std::string pattern_key = arch_key(c, "attention.sliding_window_pattern");
  const Value* pattern = f.find(pattern_key);
  if (!pattern || pattern->type() != ValueType::ARRAY)
    fail<FormatError>("{}: {} must be an array of one flag per layer", f.source(), pattern_key);
  const std::vector<bool> sliding = sliding_layers(f, c, 0);
  const uint64_t window = read_u64(f, c, "attention.sliding_window", 0);
  if (window == 0 || window > (uint64_t(1) << 24))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "attention.sliding_window"), window);

  // Sliding layers' heads: their own size and rotated dims, their own RoPE base, no scaling or factors.
  const int hd_swa = int(read_u64(f, c, "attention.key_length_swa", uint64_t(c.head_dim)));
  if (hd_swa <= 0 || hd_swa > 512)
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "attention.key_length_swa"), hd_swa);
  if (read_u64(f, c, "attention.value_length_swa", uint64_t(hd_swa)) != uint64_t(hd_swa))
    fail<Unsupported>("{}: {} differs from {}", f.source(), arch_key(c, "attention.value_length_swa"),
                      arch_key(c, "attention.key_length_swa"));
  const int dims_swa = int(read_u64(f, c, "rope.dimension_count_swa", uint64_t(c.rope.dims)));
  const float base_swa = float(read_f64(f, c, "rope.freq_base_swa", 10000.0));
  for (int l = 0; l < c.n_layer; ++l) {
    LayerSpec& layer = c.layers[size_t(l)];
    if (!sliding[size_t(l)]) continue;
    layer.window = int(window);
    layer.head_dim = hd_swa;
    layer.rope.dims = dims_swa;
    layer.rope.base = base_swa;
    layer.rope.scaling = RopeScaling::None;
    layer.rope.freq_factors = false;  // rope_freqs.weight is the global layers' proportional RoPE
  }
  for (int l = 0; l < c.n_layer; ++l)
    check_head_size(f, c, l, sliding[size_t(l)] ? "attention.key_length_swa" : "attention.key_length",
                    c.layers[size_t(l)].head_dim);
  share_kv(f, c, sliding);
  // The 26B-A4B: softmax over every expert, the top k renormalised, beside a dense MLP.
  if (c.moe.n_expert > 0) {
    c.moe.gating = ExpertGating::SoftmaxTopK;
    c.moe.normalize = true;
    c.moe.scale = 1.0f;
    c.moe.dense_beside = true;
  }
}

}  // namespace pagoda
