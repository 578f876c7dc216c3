// The weight tensors of a model (model/config.h says which it has), as views
// into the mapped GGUF file (matrices stay in their stored type; only the
// small norm and bias vectors are decoded to F32). Loading checks every name,
// shape and type, and refuses a file holding tensors the model would not use.
// Optional tensors (biases, RoPE frequency factors) are empty vectors when the
// file lacks them. Fused tensors (attn_qkv, a gate-and-up ffn_up) become
// views of their row ranges, so the forward pass never sees the fusion.
#pragma once

#include <string>
#include <vector>

#include "gguf/types.h"
#include "kernels/panels.h"
#include "model/config.h"
#include "util/progress.h"

namespace pagoda {

class GgufFile;

// A rows x cols matrix stored row by row in `type` (GGUF's ne0 = cols); or,
// after pack_panels, its first panel_rows rows as row panels of kPanelRows
// (kernels/panels.h), each panel in the bytes of its rows.
struct Matrix {
  std::string name;
  TensorType type = TensorType::F32;
  int rows = 0, cols = 0;
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
  int panel_rows = 0;

  // Row r's bytes, for r >= panel_rows (below, where row r would start).
  const uint8_t* row(int r) const { return data + size_t(r) * row_bytes; }
  // The panel holding row r, for r < panel_rows.
  const uint8_t* panel(int r) const { return row(r / kPanelRows * kPanelRows); }
};

// A Gated DeltaNet layer's weights (config.delta_net: C conv channels, H_v
// value heads of dv, value_dim = H_v dv), in place of attention's.
struct DeltaNetWeights {
  Matrix qkv;                     // C x n_embd (attn_qkv): q, k, v before the convolution
  Matrix gate;                    // value_dim x n_embd (attn_gate): z, the output's gate
  Matrix beta, alpha;             // H_v x n_embd each (ssm_beta, ssm_alpha): learning rate and decay per head
  std::vector<float> conv;        // conv_kernel x C (ssm_conv1d, transposed: tap i of every channel together)
  std::vector<float> dt_bias, a;  // H_v each (ssm_dt.bias; ssm_a = -exp(A_log))
  std::vector<float> norm;        // dv (ssm_norm): the gated RMSNorm of each head's output
  Matrix out;                     // n_embd x value_dim (ssm_out)
};

struct LayerWeights {
  std::vector<float> attn_norm;  // n_embd; empty under NormPlacement::Post
  // q_dim x n_embd (2 q_dim with attn_output_gate: per head, query rows then
  // gate rows), kv_dim x n_embd (x2), n_embd x q_dim. None on a recurrent layer.
  Matrix wq, wk, wv, wo;
  std::vector<float> bq, bk, bv, bo;        // q_dim, kv_dim, kv_dim, n_embd; empty when the file has none
  std::vector<float> q_norm, k_norm;        // head_dim each (QkNorm::PerHead), q_dim and kv_dim (Whole); else empty
  std::vector<float> attn_post_norm;        // n_embd, under Post, Sandwich and PostAdd placement; else empty
  std::vector<float> ffn_norm;              // n_embd; empty under Post
  Matrix w_gate, w_up, w_down;              // n_ff x n_embd (x2), n_embd x n_ff; none (0 rows) under experts
  std::vector<float> b_gate, b_up, b_down;  // n_ff, n_ff, n_embd; empty when the file has none
  std::vector<float> ffn_post_norm;         // n_embd, under Post, Sandwich and PostAdd; else empty
  // The post norms' biases under NormKind::Layer (attn_norm and ffn_norm are never LayerNorms); else empty.
  std::vector<float> attn_post_norm_b, ffn_post_norm_b;
  // A mixture of experts (config.moe), in place of the dense FFN. Each expert
  // is a view of its slice of the file's 3-D ffn_{gate,up,down}_exps tensor.
  Matrix router;                                      // n_expert x n_embd (ffn_gate_inp)
  std::vector<Matrix> gate_exps, up_exps, down_exps;  // per expert: moe.n_ff x n_embd (x2), n_embd x moe.n_ff
  std::vector<float> router_b;                        // n_expert; empty when the file has none
  std::vector<float> gate_exps_b, up_exps_b;          // n_expert x moe.n_ff each; empty when none
  std::vector<float> down_exps_b;                     // n_expert x n_embd; empty when none
  Matrix gate_shexp, up_shexp, down_shexp;            // the shared expert (moe.n_ff_shared wide); else none
  std::vector<float> shexp_gate;                      // n_embd (ffn_gate_inp_shexp); else empty
  std::vector<float> down_exps_scale;                 // n_expert (ffn_down_exps.scale): each expert's output scale
  // moe.dense_beside: the router input's scale (ffn_gate_inp.scale) and the
  // branches' norms (pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2), n_embd each; else empty.
  std::vector<float> router_in_scale, pre_norm_2, post_norm_1, post_norm_2;
  std::vector<float> attn_sinks;  // n_head (config.attn_sinks); else empty
  DeltaNetWeights delta;          // a recurrent layer's (LayerSpec::recurrent)
  // The per-layer input's branch (config.n_embd_per_layer = P): inp_gate
  // (P x n_embd), proj (n_embd x P), post_norm (n_embd); else none.
  Matrix per_layer_inp_gate, per_layer_proj;
  std::vector<float> per_layer_post_norm;
  float out_scale = 1.0f;  // layer_output_scale.weight (config.layer_output_scale), else 1

  // Every matrix the layer has, in the order a token passes them (a fused
  // tensor's views and each expert count once each).
  std::vector<Matrix*> matrices();
  std::vector<const Matrix*> matrices() const;
};

struct ModelWeights {
  Matrix token_embd;                          // n_vocab x n_embd
  Matrix position_embd;                       // config.position_embd: n_ctx_train x n_embd
  std::vector<float> token_type0;             // config.token_types: token type 0's row (empty when the file has none)
  std::vector<float> embd_norm, embd_norm_b;  // config.embd_norm: token_embd_norm's weight and bias
  std::vector<float> output_norm;             // empty without config.output_norm
  Matrix output;                              // n_vocab x n_embd; token_embd when the file ties them
  bool tied_embeddings = false;
  // rope_freqs.weight (Llama 3.1/3.2 long-context scaling), or LongRoPE's
  // long or short factors (Phi-3 128k, Phi-4-mini): rope_dims/2
  // factors, each dividing the angle of its pair. Empty when absent.
  std::vector<float> rope_freq_factors;
  std::vector<LayerWeights> layers;
  // Per-layer inputs (config.n_embd_per_layer = P): per_layer_token_embd
  // (n_vocab x n_layer P, row lookups), per_layer_model_proj (n_layer P x
  // n_embd), per_layer_proj_norm (P); else none.
  Matrix per_layer_token_embd, per_layer_model_proj;
  std::vector<float> per_layer_proj_norm;
  // A reranker's classification head (pooling rank, model/rank_head.cpp):
  // cls (n_embd x n_embd, then tanh) where present, then cls.output
  // (labels x n_embd). Absent (no data) in other models.
  Matrix cls, cls_out;
  std::vector<float> cls_b, cls_out_b;

  // Fills n_vocab in cfg from the embedding table.
  static ModelWeights load(const GgufFile& f, ModelConfig& cfg);

  // Where f lets its bytes be rearranged (GgufFile::edit, once per file) and
  // this CPU runs row panels fast (prefers_panels), packs every matrix of
  // such a type into panels in place: the layers', the output's and, when
  // tied to the output, the embedding's (an untied embedding only serves
  // row lookups). Not at all if the file's matrices overlap other than
  // exactly. The results stay bit-identical; decode reads the panels at up to
  // the memory's speed.
  // progress: the bytes of the matrices packed so far, of all to pack.
  void pack_panels(const GgufFile& f, const LoadProgress& progress = {});
};

}  // namespace pagoda
