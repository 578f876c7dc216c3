#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "gguf/file.h"
#include "kernels/panels.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

const TensorInfo& tensor(const GgufFile& f, const std::string& name) {
  const TensorInfo* t = f.find_tensor(name);
  if (!t) fail<FormatError>("{}: tensor '{}' is missing", f.source(), name);
  return *t;
}

void check_supported_type(const GgufFile& f, const std::string& name, const TensorInfo& t) {
  if (!weight_type_supported(t.type))
    fail<Unsupported>("{}: tensor '{}' has tensor type {}, which Pagoda does not support (supported: {})", f.source(),
                      name, tensor_type_name(t.type), supported_weight_types());
}

Matrix matrix(const GgufFile& f, const std::string& name, int rows, int cols) {
  const TensorInfo& t = tensor(f, name);
  check_supported_type(f, name, t);
  if (t.shape.size() != 2 || t.shape[0] != uint64_t(cols) || (rows >= 0 && t.shape[1] != uint64_t(rows)))
    fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}, {}]", f.source(), name, fmt::join(t.shape, ", "),
                      cols, rows);
  if (t.shape[1] > (uint64_t(1) << 24)) fail<FormatError>("{}: tensor '{}' has too many rows", f.source(), name);
  Matrix m;
  m.name = name;
  m.type = t.type;
  m.rows = int(t.shape[1]);
  m.cols = cols;
  m.row_bytes = row_bytes(t.type, size_t(cols));
  m.data = t.data;
  return m;
}

std::vector<float> vector_f32(const GgufFile& f, const std::string& name, int n) {
  const TensorInfo& t = tensor(f, name);
  if (t.shape.size() != 1 || t.shape[0] != uint64_t(n))
    fail<FormatError>("{}: tensor '{}' has shape [{}], expected [{}]", f.source(), name, fmt::join(t.shape, ", "), n);
  check_supported_type(f, name, t);
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t.type, t.data, v.data(), size_t(n));
  return v;
}

// An optional vector: empty when absent (unless required), checked when present.
std::vector<float> optional_vector_f32(const GgufFile& f, const std::string& name, int n, bool required) {
  if (!required && !f.find_tensor(name)) return {};
  return vector_f32(f, name, n);
}

}  // namespace

LlamaWeights LlamaWeights::load(const GgufFile& f, ModelConfig& cfg) {
  LlamaWeights w;
  w.token_embd = matrix(f, "token_embd.weight", -1, cfg.n_embd);
  cfg.n_vocab = w.token_embd.rows;
  w.output_norm = vector_f32(f, "output_norm.weight", cfg.n_embd);
  w.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  w.output = w.tied_embeddings ? w.token_embd : matrix(f, "output.weight", cfg.n_vocab, cfg.n_embd);
  w.rope_freq_factors = optional_vector_f32(f, "rope_freqs.weight", cfg.rope_dims / 2, false);
  for (float v : w.rope_freq_factors)
    if (!(v > 0) || !std::isfinite(v)) fail<FormatError>("{}: rope_freqs.weight has a factor {}", f.source(), v);
  for (int i = 0; i < cfg.n_layer; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights l;
    l.attn_norm = vector_f32(f, p + "attn_norm.weight", cfg.n_embd);
    l.wq = matrix(f, p + "attn_q.weight", cfg.q_dim(), cfg.n_embd);
    l.wk = matrix(f, p + "attn_k.weight", cfg.kv_dim(), cfg.n_embd);
    l.wv = matrix(f, p + "attn_v.weight", cfg.kv_dim(), cfg.n_embd);
    l.bq = optional_vector_f32(f, p + "attn_q.bias", cfg.q_dim(), cfg.qkv_bias_required);
    l.bk = optional_vector_f32(f, p + "attn_k.bias", cfg.kv_dim(), cfg.qkv_bias_required);
    l.bv = optional_vector_f32(f, p + "attn_v.bias", cfg.kv_dim(), cfg.qkv_bias_required);
    l.wo = matrix(f, p + "attn_output.weight", cfg.n_embd, cfg.q_dim());
    l.ffn_norm = vector_f32(f, p + "ffn_norm.weight", cfg.n_embd);
    l.w_gate = matrix(f, p + "ffn_gate.weight", cfg.n_ff, cfg.n_embd);
    l.w_up = matrix(f, p + "ffn_up.weight", cfg.n_ff, cfg.n_embd);
    l.w_down = matrix(f, p + "ffn_down.weight", cfg.n_embd, cfg.n_ff);
    w.layers.push_back(std::move(l));
  }
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

void LlamaWeights::pack_panels(const GgufFile& f, const LoadProgress& progress) {
  std::vector<Matrix*> matrices = {&output};  // token_embd only serves row lookups, unless tied
  for (auto& l : layers)
    for (Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) matrices.push_back(m);
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
