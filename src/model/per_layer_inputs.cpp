#include "model/per_layer_inputs.h"

#include <cmath>

namespace pagoda {

void per_layer_inputs(const ModelWeights& w, const ModelConfig& c, const Batch& batch, const float* x,
                      AlignedFloats& pl, ThreadPool& pool) {
  const int T = int(batch.tokens.size()), P = c.n_embd_per_layer, L = c.n_layer, W = L * P;
  pl.resize(size_t(T) * size_t(W));
  matmul(w.per_layer_model_proj, x, T, pl.data(), pool);  // T x W
  const float proj_scale = 1.0f / std::sqrt(float(c.n_embd)), tok_scale = std::sqrt(float(P));
  const float sum_scale = 1.0f / std::sqrt(2.0f);
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        thread_local std::vector<float> tok;
        tok.resize(size_t(W));
        for (size_t t = b; t < e; ++t) {
          float* row = &pl[t * size_t(W)];
          read_row(w.per_layer_token_embd, batch.tokens[t].token, tok.data());
          for (int i = 0; i < W; ++i) row[i] *= proj_scale;
          for (int l = 0; l < L; ++l) {
            float* slice = row + size_t(l) * P;
            rmsnorm(slice, w.per_layer_proj_norm.data(), P, c.rms_eps, slice);
            for (int i = 0; i < P; ++i) slice[i] = (slice[i] + tok[size_t(l) * P + size_t(i)] * tok_scale) * sum_scale;
          }
        }
      },
      1, size_t(T) * size_t(W) * 8);
}

void add_per_layer_input(const LayerWeights& lw, const ModelConfig& c, int layer, const float* pl, int n_tokens,
                         float* x, PerLayerBuffers& buf, ThreadPool& pool) {
  const int T = n_tokens, P = c.n_embd_per_layer, E = c.n_embd, W = c.n_layer * P;
  buf.gate.resize(size_t(T) * P);
  buf.out.resize(size_t(T) * E);
  matmul(lw.per_layer_inp_gate, x, T, buf.gate.data(), pool);  // T x P
  for (int t = 0; t < T; ++t) {
    float* g = &buf.gate[size_t(t) * P];
    gelu_tanh(g, P);
    const float* in = pl + size_t(t) * W + size_t(layer) * P;
    for (int i = 0; i < P; ++i) g[i] *= in[i];
  }
  matmul(lw.per_layer_proj, buf.gate.data(), T, buf.out.data(), pool);  // T x E
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          float* o = &buf.out[t * size_t(E)];
          rmsnorm(o, lw.per_layer_post_norm.data(), E, c.rms_eps, o);
          for (int i = 0; i < E; ++i) x[t * size_t(E) + size_t(i)] += o[i];
        }
      },
      1, size_t(T) * size_t(E) * 8);
}

}  // namespace pagoda
