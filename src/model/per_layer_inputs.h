// Per-layer inputs (gemma4's E2B/E4B, config.n_embd_per_layer = P): each
// token brings, besides its embedding, a P-wide input for every layer, made
// once per pass from a second embedding table and a projection of the
// (scaled) input embedding. After its FFN, layer l adds a small branch gated
// by its slice: x += post_norm(proj(gelu(inp_gate x) * in_l)). llama.cpp's
// build_inp_per_layer / project_per_layer_inputs and its layer loop.
#pragma once

#include "kv/batch.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace pagoda {

struct PerLayerBuffers {
  AlignedFloats gate;  // T x P
  AlignedFloats out;   // T x n_embd
};

// pl (T x n_layer P, layer l's slice of token t at [t][l P]) =
// (per_layer_token_embd[token] sqrt(P) + rmsnorm_P(per_layer_model_proj x / sqrt(n_embd))) / sqrt(2),
// x (T x n_embd) the embeddings already scaled by sqrt(n_embd).
void per_layer_inputs(const ModelWeights& w, const ModelConfig& c, const Batch& batch, const float* x,
                      AlignedFloats& pl, ThreadPool& pool);

// x (T x n_embd) += rmsnorm(proj(gelu(inp_gate x) * pl[.][layer])) for layer `layer`.
void add_per_layer_input(const LayerWeights& lw, const ModelConfig& c, int layer, const float* pl, int n_tokens,
                         float* x, PerLayerBuffers& buf, ThreadPool& pool);

}  // namespace pagoda
