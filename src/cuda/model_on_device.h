// The model where CUDA kernels read it (forward_pass.h): each tensor placed
// by a callback (a device copy; in a test, the host bytes), each layer a
// plain record of pointers and shapes.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/formats.h"
#include "cuda/moe.h"
#include "cuda/norm_rope_act.h"
#include "gguf/types.h"
#include "model/config.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "model/rope.h"
#include "util/error.h"

namespace pagoda::cuda {

// A weight matrix where the kernels read it: rows x cols of `type`, GGUF blocks.
struct Mat {
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  int64_t elems() const { return rows * cols; }
};

struct Layer {
  int n_head = 0, n_kv_head = 0, head_dim = 0, n_ff = 0;            // LayerSpec's: gemma4's layers differ
  const float *attn_norm = nullptr, *ffn_norm = nullptr;            // before each sub-block; null: none (Post)
  const float *attn_post_norm = nullptr, *ffn_post_norm = nullptr;  // after each (Post, Sandwich); null: none
  Mat wq, wk, wv, wo, gate, up, down;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;  // null: none
  const float* sinks = nullptr;                      // [n_head]: gpt-oss's attention sink logits; null: none
  const float *q_norm = nullptr, *k_norm = nullptr;  // per head or whole (cfg.qk_norm); null: none
  RopeParams rope;                                   // the layer's own (Gemma 3's local layers differ)
  int window = 0;                                    // LayerSpec::window: 0, full attention
  float out_scale = 1.0f;                            // the whole stream's after the layer (gemma4); 1: none
  // gemma4's per-layer input branch (cfg.n_embd_per_layer = P): P x E, E x P, [E]; else none.
  Mat per_layer_inp_gate, per_layer_proj;
  const float* per_layer_post_norm = nullptr;
  // A mixture of experts in place of gate, up and down (cfg.moe.n_expert > 0).
  Mat router;                                                // n_expert x n_embd
  const float* router_b = nullptr;                           // [n_expert]; null: none
  ExpertStack gate_exps, up_exps, down_exps;                 // moe.n_ff x n_embd (x2), n_embd x moe.n_ff, per expert
  const float *gate_exps_b = nullptr, *up_exps_b = nullptr;  // [n_expert][moe.n_ff]; null: none (gpt-oss has them)
  const float* down_exps_b = nullptr;                        // [n_expert][n_embd]; null: none
  const float* down_exps_scale = nullptr;                    // [n_expert]; null: none
  Mat gate_shexp, up_shexp, down_shexp;                      // the shared expert (moe.n_ff_shared wide); else none
  const float* shexp_gate = nullptr;                         // [n_embd]: its output's gate
  // moe.dense_beside (gemma4's 26B-A4B): the router input's scale and the branches' norms, [E] each.
  const float *router_in_scale = nullptr, *pre_norm_2 = nullptr, *post_norm_1 = nullptr, *post_norm_2 = nullptr;
  // A Gated DeltaNet layer in place of attention (LayerSpec::recurrent; C conv
  // channels, H_v value heads of dv, Vd = H_v dv): model/weights.h's DeltaNetWeights.
  bool recurrent = false;
  bool own_kv = true;  // false: the layer reads an earlier layer's K/V (LayerSpec::kv_source, gemma4)
  int kv_layer = -1;   // an attention layer's K/V: its own index, or its source's
  // Where its K/V are (place_kv_groups; its source's, if shared): its slot of a KV page (the
  // caches in ModelOnDevice), its group (the step's slots and tables) and its rows' stride.
  int cache = -1, kv_group = -1, kv_stride = 0;
  int state_index = -1;                   // a recurrent layer's place among them: its part of each state buffer
  Mat qkv, z_gate, beta, alpha, ssm_out;  // C x E, Vd x E, H_v x E (x2), E x Vd
  const float *conv = nullptr, *dt_bias = nullptr, *a = nullptr, *ssm_norm = nullptr;  // K x C, H_v, H_v, dv
};

// The model where the kernels read it, its paged K/V caches and a hybrid's state pool.
struct ModelOnDevice {
  ModelConfig cfg;
  Mat token_embd, output;
  const float* output_norm = nullptr;
  // gemma4's per-layer inputs (P = cfg.n_embd_per_layer, W = n_layer P): a
  // token table (n_vocab x W), a projection of the embedding (W x E), a norm [P].
  Mat per_layer_token_embd, per_layer_model_proj;
  const float* per_layer_proj_norm = nullptr;
  std::vector<Layer> layers;
  // The K/V pool as model/kv_storage.h lays it out (vLLM's hybrid KV cache): a
  // page holds one KV group's layers, a layer at its slot (Layer::cache); each
  // slot's K and V of every page together, [num_blocks][block_size][kv_slot_dims[slot]] F16.
  std::vector<__half*> k_cache, v_cache;
  std::vector<int> kv_slot_dims;
  int block_size = 16;
  int64_t largest_layer_matrix = 0;  // elements: the F16 scratch of the cuBLAS path
  int64_t widest_input = 0;          // the most columns of a matrix a layer multiplies (E, Q, F or Vd)
  // Recurrent state (delta_net.h): buffer b's part for recurrent layer i is
  // states + b * state_buffer_floats + i * state_layer_floats.
  float* states = nullptr;
  int64_t state_buffer_floats = 0, state_layer_floats = 0;
};

// The model placed where the kernels read it: place(host, bytes) answers
// where a tensor's bytes are (a device copy; in a test, the host bytes).
// Unsupported for a weight type no kernel decodes or a bias the pass does not
// add; InvalidArgument for weights packed into CPU row panels (load the model
// mapped). The KV groups (place_kv_groups), the caches and the state pool are
// the caller's to add.
template <class Place>
ModelOnDevice place_model(const Model& model, Place&& place) {
  auto vec = [&](const std::vector<float>& v) {
    return v.empty() ? nullptr : static_cast<const float*>(place(v.data(), v.size() * sizeof(float)));
  };
  auto mat = [&](const Matrix& w) {
    if (w.rows == 0) return Mat{};  // none: the dense FFN under experts, the router of a dense model
    if (w.panel_rows > 0)
      fail<InvalidArgument>("{} is packed into CPU row panels; the GPU reads a mapped model", w.name);
    if (!cuda::weight_type_supported(w.type))
      fail<Unsupported>("{} is {}, which no CUDA kernel decodes yet", w.name, tensor_type_name(w.type));
    return Mat{w.type, w.rows, w.cols, place(w.data, size_t(w.rows) * w.row_bytes)};
  };
  // An expert stack: the experts' views of one 3-D tensor, evenly strided, placed once (`span`
  // bytes from the first's, 0: through the last's matrix); or, `placed`, read where another
  // stack placed them (gemma4's fused gate-and-up tensor: each expert's up rows follow its gate
  // rows, so gate's stack places the whole tensor and up's reads it).
  auto experts = [&](const std::vector<Matrix>& e, const void* placed = nullptr, size_t span = 0) {
    if (e.empty()) return ExpertStack{};
    const Matrix& w = e.front();
    const size_t bytes = size_t(w.rows) * w.row_bytes;
    const size_t stride = e.size() > 1 ? size_t(e[1].data - w.data) : bytes;
    for (size_t i = 0; i < e.size(); ++i)
      if (e[i].panel_rows > 0 || e[i].data != w.data + i * stride || e[i].type != w.type || stride < bytes)
        fail<InvalidArgument>("{}'s experts are not one mapped tensor; the GPU reads a mapped model", w.name);
    if (!cuda::weight_type_supported(w.type))
      fail<Unsupported>("{} is {}, which no CUDA kernel decodes yet", w.name, tensor_type_name(w.type));
    if (span == 0) span = stride * (e.size() - 1) + bytes;
    return ExpertStack{w.type, w.rows, w.cols, int(e.size()), placed ? placed : place(w.data, span), int64_t(stride)};
  };
  ModelOnDevice d;
  d.cfg = model.config();
  int n_recurrent = 0;
  const ModelWeights& w = model.weights();
  d.token_embd = mat(w.token_embd);
  d.output = mat(w.output);
  d.output_norm = vec(w.output_norm);
  d.per_layer_token_embd = mat(w.per_layer_token_embd);
  d.per_layer_model_proj = mat(w.per_layer_model_proj);
  d.per_layer_proj_norm = vec(w.per_layer_proj_norm);
  d.largest_layer_matrix = d.per_layer_model_proj.elems();
  d.widest_input = d.per_layer_model_proj.cols;
  for (size_t li = 0; li < w.layers.size(); ++li) {
    const LayerWeights& lw = w.layers[li];
    const LayerSpec& spec = d.cfg.layers[li];
    if (!lw.b_gate.empty() || !lw.b_up.empty() || !lw.b_down.empty())
      fail<Unsupported>("the CUDA forward pass adds no dense FFN biases");
    const int n_rot = !spec.rope.enabled || spec.recurrent ? 0 : spec.rope.dims > 0 ? spec.rope.dims : spec.head_dim;
    const Rope::YarnRamp ramp = Rope::yarn_ramp(spec.rope, n_rot);
    const bool own_kv = spec.kv_source < 0;
    // gemma4's ffn_gate_up_exps: each expert's gate rows, then its up rows, in one tensor.
    // Told apart by up's first rows following gate's and gate's experts two matrices apart (two
    // adjacent 3-D tensors of one expert each would pass the first test alone).
    const size_t gate_bytes =
        lw.gate_exps.empty() ? 0 : size_t(lw.gate_exps.front().rows) * lw.gate_exps.front().row_bytes;
    const bool fused_gate_up = lw.gate_exps.size() > 1 && lw.up_exps.size() == lw.gate_exps.size() &&
                               lw.up_exps.front().data == lw.gate_exps.front().data + gate_bytes &&
                               lw.gate_exps[1].data == lw.gate_exps.front().data + 2 * gate_bytes;
    if (!own_kv && (spec.kv_source >= int(li) || !d.layers[size_t(spec.kv_source)].own_kv ||
                    d.layers[size_t(spec.kv_source)].recurrent))
      fail<InvalidArgument>("layer {} reads the K/V of layer {}, which keeps none before it", li, spec.kv_source);
    Layer l{.n_head = spec.n_head,
            .n_kv_head = spec.n_head_kv,
            .head_dim = spec.head_dim,
            .n_ff = spec.n_ff,
            .attn_norm = vec(lw.attn_norm),
            .ffn_norm = vec(lw.ffn_norm),
            .attn_post_norm = vec(lw.attn_post_norm),
            .ffn_post_norm = vec(lw.ffn_post_norm),
            .wq = mat(lw.wq),
            .wk = mat(lw.wk),
            .wv = mat(lw.wv),
            .wo = mat(lw.wo),
            .gate = mat(lw.w_gate),
            .up = mat(lw.w_up),
            .down = mat(lw.w_down),
            .bq = vec(lw.bq),
            .bk = vec(lw.bk),
            .bv = vec(lw.bv),
            .bo = vec(lw.bo),
            .sinks = vec(lw.attn_sinks),
            .q_norm = vec(lw.q_norm),
            .k_norm = vec(lw.k_norm),
            .rope = {.n_rot = n_rot,
                     .freq_base = spec.rope.base,
                     .style = spec.rope.layout == RopeLayout::NeoX ? RopeStyle::kNeox : RopeStyle::kNormal,
                     .freq_factors = spec.rope.freq_factors ? vec(w.rope_freq_factors) : nullptr,
                     .linear_factor = spec.rope.scaling == RopeScaling::Linear ? spec.rope.factor : 1.0f,
                     .mscale = Rope::mscale(spec.rope),
                     .yarn_factor = spec.rope.scaling == RopeScaling::Yarn ? spec.rope.factor : 0.0f,
                     .yarn_low = ramp.low,
                     .yarn_high = ramp.high},
            .window = spec.window,
            .out_scale = lw.out_scale,
            .per_layer_inp_gate = mat(lw.per_layer_inp_gate),
            .per_layer_proj = mat(lw.per_layer_proj),
            .per_layer_post_norm = vec(lw.per_layer_post_norm),
            .router = mat(lw.router),
            .router_b = vec(lw.router_b),
            .gate_exps = experts(lw.gate_exps, nullptr, fused_gate_up ? 2 * gate_bytes * lw.gate_exps.size() : 0),
            .up_exps = fused_gate_up ? ExpertStack{} : experts(lw.up_exps),
            .down_exps = experts(lw.down_exps),
            .gate_exps_b = vec(lw.gate_exps_b),
            .up_exps_b = vec(lw.up_exps_b),
            .down_exps_b = vec(lw.down_exps_b),
            .down_exps_scale = vec(lw.down_exps_scale),
            .gate_shexp = mat(lw.gate_shexp),
            .up_shexp = mat(lw.up_shexp),
            .down_shexp = mat(lw.down_shexp),
            .shexp_gate = vec(lw.shexp_gate),
            .router_in_scale = vec(lw.router_in_scale),
            .pre_norm_2 = vec(lw.pre_norm_2),
            .post_norm_1 = vec(lw.post_norm_1),
            .post_norm_2 = vec(lw.post_norm_2),
            .recurrent = spec.recurrent,
            .own_kv = own_kv,
            .kv_layer = spec.recurrent ? -1
                        : own_kv       ? int(li)
                                       : spec.kv_source,
            .state_index = spec.recurrent ? n_recurrent++ : -1,
            .qkv = mat(lw.delta.qkv),
            .z_gate = mat(lw.delta.gate),
            .beta = mat(lw.delta.beta),
            .alpha = mat(lw.delta.alpha),
            .ssm_out = mat(lw.delta.out),
            .conv = vec(lw.delta.conv),
            .dt_bias = vec(lw.delta.dt_bias),
            .a = vec(lw.delta.a),
            .ssm_norm = vec(lw.delta.norm)};
    // The router never goes to cuBLAS; the experts never to matmul().
    for (const Mat* x :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down, &l.router, &l.qkv, &l.z_gate, &l.beta, &l.alpha,
          &l.ssm_out, &l.gate_shexp, &l.up_shexp, &l.down_shexp, &l.per_layer_inp_gate, &l.per_layer_proj}) {
      if (x != &l.router) d.largest_layer_matrix = std::max(d.largest_layer_matrix, x->elems());
      d.widest_input = std::max(d.widest_input, x->cols);
    }
    if (fused_gate_up) l.up_exps = experts(lw.up_exps, static_cast<const uint8_t*>(l.gate_exps.data) + gate_bytes);
    d.layers.push_back(l);
  }
  const DeltaNetSpec& dn = d.cfg.delta_net;
  d.state_layer_floats = dn.conv_state_floats() + dn.matrix_state_floats();
  d.state_buffer_floats = n_recurrent * d.state_layer_floats;
  return d;
}

// Puts each attention layer at its KV group and slot (model/kv_storage.h's
// layout: a layer's rows as wide as its slot's) and sizes the slots; the
// caches themselves are the caller's to add, one K and one V a slot.
// InvalidArgument where the groups do not fit the model (check_kv_groups).
inline void place_kv_groups(ModelOnDevice& d, const KvGroups& groups) {
  check_kv_groups(d.cfg, groups);
  d.kv_slot_dims = kv_slot_dims(d.cfg, groups);
  for (Layer& l : d.layers) {
    if (l.kv_layer < 0) continue;
    const size_t src = size_t(l.kv_layer);
    l.cache = groups.slot_of[src];
    l.kv_group = groups.group_of[src];
    l.kv_stride = d.kv_slot_dims[size_t(l.cache)];
  }
}

}  // namespace pagoda::cuda
