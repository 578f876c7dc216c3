#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "gguf/file.h"
#include "kernels/panels.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

void check_supported_type(const GgufFile& f, const std::string& name, const TensorInfo& t) {
  if (!weight_type_supported(t.type))
    fail<Unsupported>("{}: tensor '{}' has tensor type {}, which Pagoda does not support (supported: {})", f.source(),
                      name, tensor_type_name(t.type), supported_weight_types());
}

// Reads the file's tensors by name, remembering which it took, so that a
// tensor the model would not use (a feature not implemented: an output bias,
// LongRoPE factors, experts) refuses the file instead of being silently ignored.
class TensorReader {
 public:
  explicit TensorReader(const GgufFile& f) : f_(f) {}

  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  // rows < 0: any row count. The first `take_rows` rows from `first_row` on (all: -1).
  Matrix matrix(const std::string& name, int rows, int cols, int first_row = 0, int take_rows = -1) {
    const TensorInfo& t = tensor(name);
    check_supported_type(f_, name, t);
    if (t.shape.size() != 2 || t.shape[0] != uint64_t(cols) || (rows >= 0 && t.shape[1] != uint64_t(rows)))
      fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}, {}]", f_.source(), name,
                        fmt::join(t.shape, ", "), cols, rows);
    if (t.shape[1] > (uint64_t(1) << 24)) fail<FormatError>("{}: tensor '{}' has too many rows", f_.source(), name);
    Matrix m;
    m.name = name;
    m.type = t.type;
    m.rows = take_rows < 0 ? int(t.shape[1]) : take_rows;
    m.cols = cols;
    m.row_bytes = row_bytes(t.type, size_t(cols));
    m.data = t.data + size_t(first_row) * m.row_bytes;
    return m;
  }

  // A 3-D tensor of n matrices (GGUF shape [cols, rows, n]), as one view per matrix.
  std::vector<Matrix> matrices(const std::string& name, int n, int rows, int cols) {
    const TensorInfo& t = tensor(name);
    check_supported_type(f_, name, t);
    if (t.shape.size() != 3 || t.shape[0] != uint64_t(cols) || t.shape[1] != uint64_t(rows) ||
        t.shape[2] != uint64_t(n))
      fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}, {}, {}]", f_.source(), name,
                        fmt::join(t.shape, ", "), cols, rows, n);
    std::vector<Matrix> out(static_cast<size_t>(n));
    for (int e = 0; e < n; ++e) {
      Matrix& m = out[size_t(e)];
      m.name = fmt::format("{}[{}]", name, e);
      m.type = t.type;
      m.rows = rows;
      m.cols = cols;
      m.row_bytes = row_bytes(t.type, size_t(cols));
      m.data = t.data + size_t(e) * size_t(rows) * m.row_bytes;
    }
    return out;
  }

  std::vector<float> vector(const std::string& name, int n) {
    const TensorInfo& t = tensor(name);
    if (t.shape.size() != 1 || t.shape[0] != uint64_t(n))
      fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}]", f_.source(), name, fmt::join(t.shape, ", "),
                        n);
    check_supported_type(f_, name, t);
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), size_t(n));
    return v;
  }

  // count vectors of n (GGUF shape [n, count], F32 or F16), one after another.
  std::vector<float> vectors(const std::string& name, int n, int count) {
    const TensorInfo& t = tensor(name);
    if (t.shape.size() != 2 || t.shape[0] != uint64_t(n) || t.shape[1] != uint64_t(count))
      fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}, {}]", f_.source(), name,
                        fmt::join(t.shape, ", "), n, count);
    check_supported_type(f_, name, t);
    std::vector<float> v(size_t(n) * size_t(count));
    for (int i = 0; i < count; ++i)
      dequantize_row(t.type, t.data + size_t(i) * row_bytes(t.type, size_t(n)), v.data() + size_t(i) * n, size_t(n));
    return v;
  }

  // Empty when absent (unless required), checked when present.
  std::vector<float> optional_vector(const std::string& name, int n, bool required = false) {
    if (!required && !has(name)) return {};
    return vector(name, n);
  }

  // FormatError / Unsupported naming a tensor no reader took, outside the
  // layers below `skipped_from` (glm4's multi-token-prediction layers).
  void check_all_used(int skipped_from) const {
    for (const TensorInfo& t : f_.tensors()) {
      if (used_.contains(t.name)) continue;
      int layer = -1;
      if (std::sscanf(t.name.c_str(), "blk.%d.", &layer) == 1 && layer >= skipped_from) continue;
      fail<Unsupported>("{}: tensor '{}' is not used by Pagoda's {} model: the file needs a feature Pagoda lacks",
                        f_.source(), t.name, f_.get_string("general.architecture"));
    }
  }

 private:
  const TensorInfo& tensor(const std::string& name) {
    const TensorInfo* t = f_.find_tensor(name);
    if (!t) fail<FormatError>("{}: tensor '{}' is missing", f_.source(), name);
    used_.insert(name);
    return *t;
  }

  const GgufFile& f_;
  std::set<std::string> used_;
};

// Q, K and V: three tensors, or one attn_qkv whose rows are Q's, K's then V's.
// A layer reading another's K/V (kv_source) has Q alone: K and V, where the
// file keeps them anyway, are taken and not used. gemma4 (v_norm) may lack V:
// its V is then K's projection (Google's attention_k_eq_v).
void load_qkv(TensorReader& r, const std::string& p, const ModelConfig& c, const LayerSpec& s, LayerWeights& l) {
  const int q = s.q_dim() * (c.attn_output_gate ? 2 : 1), kv = s.kv_dim(), E = c.n_embd;
  if (s.kv_source >= 0) {
    l.wq = r.matrix(p + "attn_q.weight", q, E);
    for (const char* unused : {"attn_k.weight", "attn_v.weight"})
      if (r.has(p + unused)) r.matrix(p + unused, kv, E);
    if (r.has(p + "attn_k_norm.weight")) r.vector(p + "attn_k_norm.weight", s.head_dim);
    return;
  }
  if (c.v_norm && !r.has(p + "attn_qkv.weight") && !r.has(p + "attn_v.weight")) {
    l.wq = r.matrix(p + "attn_q.weight", q, E);
    l.wk = r.matrix(p + "attn_k.weight", kv, E);
    return;
  }
  if (r.has(p + "attn_qkv.weight")) {
    l.wq = r.matrix(p + "attn_qkv.weight", q + 2 * kv, E, 0, q);
    l.wk = r.matrix(p + "attn_qkv.weight", q + 2 * kv, E, q, kv);
    l.wv = r.matrix(p + "attn_qkv.weight", q + 2 * kv, E, q + kv, kv);
    const std::vector<float> b = r.optional_vector(p + "attn_qkv.bias", q + 2 * kv, c.qkv_bias_required);
    if (!b.empty()) {
      l.bq.assign(b.begin(), b.begin() + q);
      l.bk.assign(b.begin() + q, b.begin() + q + kv);
      l.bv.assign(b.begin() + q + kv, b.end());
      return;
    }
  } else {
    l.wq = r.matrix(p + "attn_q.weight", q, E);
    l.wk = r.matrix(p + "attn_k.weight", kv, E);
    l.wv = r.matrix(p + "attn_v.weight", kv, E);
  }
  l.bq = r.optional_vector(p + "attn_q.bias", q, c.qkv_bias_required);
  l.bk = r.optional_vector(p + "attn_k.bias", kv, c.qkv_bias_required);
  l.bv = r.optional_vector(p + "attn_v.bias", kv, c.qkv_bias_required);
}

// Gate and up: two tensors, or (fused_gate_up) one ffn_up of gate's rows then up's; or up alone (ungated).
void load_gate_up(TensorReader& r, const std::string& p, const ModelConfig& c, int F, LayerWeights& l) {
  const int E = c.n_embd;
  if (!c.gated_ffn()) {  // up alone
    l.w_up = r.matrix(p + "ffn_up.weight", F, E);
    l.b_up = r.optional_vector(p + "ffn_up.bias", F);
    return;
  }
  if (c.fused_gate_up) {
    l.w_gate = r.matrix(p + "ffn_up.weight", 2 * F, E, 0, F);
    l.w_up = r.matrix(p + "ffn_up.weight", 2 * F, E, F, F);
    return;
  }
  l.w_gate = r.matrix(p + "ffn_gate.weight", F, E);
  l.w_up = r.matrix(p + "ffn_up.weight", F, E);
  l.b_gate = r.optional_vector(p + "ffn_gate.bias", F);
  l.b_up = r.optional_vector(p + "ffn_up.bias", F);
}

// The router and the experts' 3-D tensors, in place of the dense FFN (gate
// and up apart, or one ffn_gate_up_exps of gate's rows then up's per expert).
void load_experts(TensorReader& r, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  const int E = c.n_embd, F = c.moe.n_ff, n = c.moe.n_expert;
  l.router = r.matrix(p + "ffn_gate_inp.weight", n, E);
  if (r.has(p + "ffn_gate_up_exps.weight")) {
    for (const Matrix& both : r.matrices(p + "ffn_gate_up_exps.weight", n, 2 * F, E)) {
      Matrix gate = both, up = both;
      gate.rows = up.rows = F;
      up.data += size_t(F) * both.row_bytes;
      gate.name += ".gate", up.name += ".up";
      l.gate_exps.push_back(gate);
      l.up_exps.push_back(up);
    }
  } else {
    l.gate_exps = r.matrices(p + "ffn_gate_exps.weight", n, F, E);
    l.up_exps = r.matrices(p + "ffn_up_exps.weight", n, F, E);
  }
  l.down_exps = r.matrices(p + "ffn_down_exps.weight", n, E, F);
  l.down_exps_scale = r.optional_vector(p + "ffn_down_exps.scale", n);
  if (c.moe.dense_beside) {
    l.router_in_scale = r.vector(p + "ffn_gate_inp.scale", E);
    l.pre_norm_2 = r.vector(p + "pre_ffw_norm_2.weight", E);
    l.post_norm_1 = r.vector(p + "post_ffw_norm_1.weight", E);
    l.post_norm_2 = r.vector(p + "post_ffw_norm_2.weight", E);
  }
  l.router_b = r.optional_vector(p + "ffn_gate_inp.bias", n);
  if (r.has(p + "ffn_gate_exps.bias")) l.gate_exps_b = r.vectors(p + "ffn_gate_exps.bias", F, n);
  if (r.has(p + "ffn_up_exps.bias")) l.up_exps_b = r.vectors(p + "ffn_up_exps.bias", F, n);
  if (r.has(p + "ffn_down_exps.bias")) l.down_exps_b = r.vectors(p + "ffn_down_exps.bias", E, n);
  if (const int S = c.moe.n_ff_shared; S > 0) {
    l.gate_shexp = r.matrix(p + "ffn_gate_shexp.weight", S, E);
    l.up_shexp = r.matrix(p + "ffn_up_shexp.weight", S, E);
    l.down_shexp = r.matrix(p + "ffn_down_shexp.weight", E, S);
    l.shexp_gate = r.vector(p + "ffn_gate_inp_shexp.weight", E);
  }
}

// A Gated DeltaNet layer's tensors (llama.cpp's names for Qwen3.5's).
void load_delta_net(TensorReader& r, const std::string& p, const ModelConfig& c, DeltaNetWeights& d) {
  const DeltaNetSpec& s = c.delta_net;
  const int E = c.n_embd, C = s.conv_channels(), H = s.n_v_heads, V = s.n_v_heads * s.head_v_dim, K = s.conv_kernel;
  d.qkv = r.matrix(p + "attn_qkv.weight", C, E);
  d.gate = r.matrix(p + "attn_gate.weight", V, E);
  d.beta = r.matrix(p + "ssm_beta.weight", H, E);
  d.alpha = r.matrix(p + "ssm_alpha.weight", H, E);
  const std::vector<float> conv = r.vectors(p + "ssm_conv1d.weight", K, C);  // channel by channel
  d.conv.resize(conv.size());
  for (int ch = 0; ch < C; ++ch)
    for (int i = 0; i < K; ++i) d.conv[size_t(i) * C + size_t(ch)] = conv[size_t(ch) * K + size_t(i)];
  d.dt_bias = r.vector(p + "ssm_dt.bias", H);
  d.a = r.vector(p + "ssm_a", H);
  d.norm = r.vector(p + "ssm_norm.weight", s.head_v_dim);
  d.out = r.matrix(p + "ssm_out.weight", E, V);
}

// Per-layer inputs (config.n_embd_per_layer): the model's tables, then each layer's branch.
void load_per_layer_inputs(TensorReader& r, const ModelConfig& c, ModelWeights& w) {
  const int P = c.n_embd_per_layer, E = c.n_embd;
  w.per_layer_token_embd = r.matrix("per_layer_token_embd.weight", c.n_vocab, c.n_layer * P);
  w.per_layer_model_proj = r.matrix("per_layer_model_proj.weight", c.n_layer * P, E);
  w.per_layer_proj_norm = r.vector("per_layer_proj_norm.weight", P);
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights& l = w.layers[size_t(i)];
    l.per_layer_inp_gate = r.matrix(p + "inp_gate.weight", P, E);
    l.per_layer_proj = r.matrix(p + "proj.weight", E, P);
    l.per_layer_post_norm = r.vector(p + "post_norm.weight", E);
  }
}

}  // namespace

std::vector<Matrix*> LayerWeights::matrices() {
  std::vector<Matrix*> all;
  for (Matrix* m : {&wq, &wk, &wv, &delta.qkv, &delta.gate, &delta.beta, &delta.alpha, &delta.out, &wo, &router,
                    &w_gate, &w_up, &w_down, &gate_shexp, &up_shexp, &down_shexp, &per_layer_inp_gate, &per_layer_proj})
    if (m->rows > 0) all.push_back(m);
  for (size_t e = 0; e < gate_exps.size(); ++e)
    for (auto* experts : {&gate_exps, &up_exps, &down_exps}) all.push_back(&(*experts)[e]);
  return all;
}

std::vector<const Matrix*> LayerWeights::matrices() const {
  const auto all = const_cast<LayerWeights*>(this)->matrices();
  return {all.begin(), all.end()};
}

ModelWeights ModelWeights::load(const GgufFile& f, ModelConfig& cfg) {
  TensorReader r(f);
  ModelWeights w;
  const int E = cfg.n_embd;
  w.token_embd = r.matrix("token_embd.weight", -1, E);
  cfg.n_vocab = w.token_embd.rows;
  if (cfg.output_norm) w.output_norm = r.vector("output_norm.weight", E);
  if (cfg.position_embd) w.position_embd = r.matrix("position_embd.weight", cfg.n_ctx_train, E);
  if (cfg.token_types && r.has("token_types.weight")) {  // any number of types; every input is type 0
    const Matrix types = r.matrix("token_types.weight", -1, E);
    if (types.rows < 1) fail<FormatError>("{}: token_types.weight has no rows", f.source());
    w.token_type0.resize(size_t(E));
    dequantize_row(types.type, types.data, w.token_type0.data(), size_t(E));
  }
  if (cfg.embd_norm) {
    w.embd_norm = r.vector("token_embd_norm.weight", E);
    w.embd_norm_b = r.vector("token_embd_norm.bias", E);
  }
  w.tied_embeddings = !r.has("output.weight");
  w.output = w.tied_embeddings ? w.token_embd : r.matrix("output.weight", cfg.n_vocab, E);
  w.rope_freq_factors = r.optional_vector("rope_freqs.weight", cfg.rope.dims / 2);
  if (r.has("cls.weight")) {
    w.cls = r.matrix("cls.weight", E, E);
    w.cls_b = r.optional_vector("cls.bias", E);
  }
  if (r.has("cls.output.weight")) {
    w.cls_out = r.matrix("cls.output.weight", -1, E);
    if (w.cls_out.rows < 1 || w.cls_out.rows > 4096)
      fail<FormatError>("{}: cls.output.weight has {} labels", f.source(), w.cls_out.rows);
    w.cls_out_b = r.optional_vector("cls.output.bias", w.cls_out.rows);
  }
  // LongRoPE: llama.cpp takes the long factors when the context exceeds the
  // original one, the short ones otherwise; Pagoda serves the whole trained context.
  if (r.has("rope_factors_long.weight")) {
    auto long_factors = r.vector("rope_factors_long.weight", cfg.rope.dims / 2);
    auto short_factors = r.vector("rope_factors_short.weight", cfg.rope.dims / 2);
    w.rope_freq_factors = cfg.n_ctx_train > cfg.rope.yarn_orig_ctx ? long_factors : short_factors;
  }
  for (float v : w.rope_freq_factors)
    if (!(v > 0) || !std::isfinite(v)) fail<FormatError>("{}: rope_freqs.weight has a factor {}", f.source(), v);
  const bool pre = cfg.pre_norms(), post = cfg.post_norms(), biased = cfg.norm_kind == NormKind::Layer;
  for (int i = 0; i < cfg.n_layer; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    const LayerSpec& s = cfg.layers[size_t(i)];
    const int qn = cfg.qk_norm == QkNorm::Whole ? s.q_dim() : s.head_dim;
    const int kn = cfg.qk_norm == QkNorm::Whole ? s.kv_dim() : s.head_dim;
    LayerWeights l;
    if (pre) l.attn_norm = r.vector(p + "attn_norm.weight", E);
    if (s.recurrent) {
      load_delta_net(r, p, cfg, l.delta);
    } else {
      load_qkv(r, p, cfg, s, l);
      if (cfg.qk_norm != QkNorm::None) {
        l.q_norm = r.vector(p + "attn_q_norm.weight", qn);
        if (s.kv_source < 0) l.k_norm = r.vector(p + "attn_k_norm.weight", kn);
      }
      if (cfg.attn_sinks) l.attn_sinks = r.vector(p + "attn_sinks.weight", s.n_head);
      l.wo = r.matrix(p + "attn_output.weight", E, s.q_dim());
      l.bo = r.optional_vector(p + "attn_output.bias", E);
    }
    if (post) l.attn_post_norm = r.vector(p + cfg.attn_post_norm_name + ".weight", E);
    if (post && biased) l.attn_post_norm_b = r.vector(p + cfg.attn_post_norm_name + ".bias", E);
    if (pre) l.ffn_norm = r.vector(p + cfg.ffn_norm_name + ".weight", E);
    if (cfg.moe.n_expert > 0) load_experts(r, p, cfg, l);
    if (cfg.moe.n_expert == 0 || cfg.moe.dense_beside) {
      load_gate_up(r, p, cfg, s.n_ff, l);
      l.w_down = r.matrix(p + "ffn_down.weight", E, s.n_ff);
      l.b_down = r.optional_vector(p + "ffn_down.bias", E);
    }
    if (post) l.ffn_post_norm = r.vector(p + cfg.ffn_post_norm_name + ".weight", E);
    if (post && biased) l.ffn_post_norm_b = r.vector(p + cfg.ffn_post_norm_name + ".bias", E);
    if (cfg.layer_output_scale && r.has(p + "layer_output_scale.weight"))
      l.out_scale = r.vector(p + "layer_output_scale.weight", 1)[0];
    w.layers.push_back(std::move(l));
  }
  if (cfg.n_embd_per_layer > 0) load_per_layer_inputs(r, cfg, w);
  r.check_all_used(cfg.n_layer);
  return w;
}

namespace {

const uint8_t* end_of(const Matrix& m) { return m.data + size_t(m.rows) * m.row_bytes; }

// Whether the matrices' bytes are disjoint or identical (the tied output is
// token_embd): a file whose tensors overlap otherwise could not be packed
// one matrix at a time without rearranging another's bytes under it.
bool packable(std::vector<const Matrix*> all) {
  std::sort(all.begin(), all.end(), [](const Matrix* a, const Matrix* b) { return a->data < b->data; });
  for (size_t i = 1; i < all.size(); ++i) {
    const Matrix &a = *all[i - 1], &b = *all[i];
    const bool same = a.data == b.data && end_of(a) == end_of(b) && a.type == b.type && a.row_bytes == b.row_bytes;
    if (b.data < end_of(a) && !same) return false;
  }
  return true;
}

}  // namespace

void ModelWeights::pack_panels(const GgufFile& f, const LoadProgress& progress) {
  std::vector<Matrix*> matrices = {&output};  // token_embd only serves row lookups, unless tied
  for (auto& l : layers)
    for (Matrix* m : l.matrices()) matrices.push_back(m);
  std::vector<const Matrix*> all(matrices.begin(), matrices.end());
  all.push_back(&token_embd);
  if (!packable(all)) return;
  std::erase_if(matrices, [](const Matrix* m) { return !prefers_panels(m->type); });
  if (matrices.empty()) return;
  std::map<const uint8_t*, int> packed;  // matrices on the same bytes are packed once
  uint64_t total = 0, done = 0;
  for (const Matrix* m : matrices) total += uint64_t(m->rows) * m->row_bytes;
  // Panels are independent: each matrix's are split across the threads (a
  // pool for the load only; packing runs at about 1 GB/s a thread).
  ThreadPool pool;
  f.edit([&] {
    for (Matrix* m : matrices) {
      const auto [it, fresh] = packed.try_emplace(m->data, 0);
      if (fresh) {
        const size_t panels = size_t(m->rows / kPanelRows), panel_bytes = kPanelRows * m->row_bytes;
        uint8_t* data = const_cast<uint8_t*>(m->data);
        pool.parallel_for(
            panels,
            [&](size_t begin, size_t end) {
              pagoda::pack_panels(m->type, data + begin * panel_bytes, m->row_bytes, int((end - begin) * kPanelRows));
            },
            1, panels * panel_bytes);
        it->second = int(panels) * kPanelRows;
      }
      m->panel_rows = it->second;
      done += uint64_t(m->rows) * m->row_bytes;
      if (progress) progress("repacking", done, total);
    }
  });
  // token_embd on the bytes of a packed matrix (tied to the output, or a
  // file that points it at a layer's) reads its rows through the panels.
  if (const auto it = packed.find(token_embd.data); it != packed.end()) token_embd.panel_rows = it->second;
}

}  // namespace pagoda
