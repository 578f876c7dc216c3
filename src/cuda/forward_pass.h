// One step's forward pass as the kernels' launches, written once over `Ops`:
// CudaDevice runs it with the real launchers on its stream; a test runs it
// with the kernels' own source on the CPU and compares the logits with the
// CPU model's (tests/cuda/forward_emulation_test.cpp), so the pass's buffers,
// offsets and shapes are checked where no GPU is. Ops has a method per
// launcher, with the launcher's arguments less the stream, that throws on
// failure; gemm_f16 is `out = x16 w16^T`.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/attention.h"
#include "cuda/formats.h"
#include "cuda/matvec.h"
#include "cuda/mmq.h"
#include "cuda/moe.h"
#include "cuda/norm_rope_act.h"
#include "gguf/types.h"
#include "gpu/step_upload.h"
#include "model/config.h"
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
  const float *attn_norm = nullptr, *ffn_norm = nullptr;            // before each sub-block; null: none (Post)
  const float *attn_post_norm = nullptr, *ffn_post_norm = nullptr;  // after each (Post, Sandwich); null: none
  Mat wq, wk, wv, wo, gate, up, down;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;  // null: none
  const float* sinks = nullptr;                      // [n_head]: gpt-oss's attention sink logits; null: none
  const float *q_norm = nullptr, *k_norm = nullptr;  // per head or whole (cfg.qk_norm); null: none
  RopeParams rope;                                   // the layer's own (Gemma 3's local layers differ)
  int window = 0;                                    // LayerSpec::window: 0, full attention
  // A mixture of experts in place of gate, up and down (cfg.moe.n_expert > 0).
  Mat router;                                                // n_expert x n_embd
  const float* router_b = nullptr;                           // [n_expert]; null: none
  ExpertStack gate_exps, up_exps, down_exps;                 // moe.n_ff x n_embd (x2), n_embd x moe.n_ff, per expert
  const float *gate_exps_b = nullptr, *up_exps_b = nullptr;  // [n_expert][moe.n_ff]; null: none (gpt-oss has them)
  const float* down_exps_b = nullptr;                        // [n_expert][n_embd]; null: none
  const float* down_exps_scale = nullptr;                    // [n_expert]; null: none
};

// The model where the kernels read it, and its paged K/V caches (per layer,
// [num_blocks][block_size][kv_dim] F16).
struct ModelOnDevice {
  ModelConfig cfg;
  Mat token_embd, output;
  const float* output_norm = nullptr;
  std::vector<Layer> layers;
  std::vector<__half*> k_cache, v_cache;
  int block_size = 16;
  int64_t largest_layer_matrix = 0;  // elements: the F16 scratch of the cuBLAS path
};

// A step's activations (T tokens, L logits rows, E n_embd, Q q_dim, K kv_dim,
// F n_ff, V n_vocab).
struct StepBuffers {
  float *x = nullptr, *h = nullptr;      // T x E: the residual stream, a normed or projected copy
  float *q = nullptr, *attn = nullptr;   // T x Q
  float *k = nullptr, *v = nullptr;      // T x K
  float *gate = nullptr, *up = nullptr;  // T x F
  // A mixture of experts' (N n_expert, k n_used, M moe.n_ff), for kMoeChunkTokens tokens at a time:
  float* router_logits = nullptr;                      // T x N
  int32_t* expert_ids = nullptr;                       // C x k, C = min(T, kMoeChunkTokens): the slots' experts
  float* expert_weights = nullptr;                     // C x k
  int32_t* expert_order = nullptr;                     // C x k: the slots by expert (moe_group)
  ExpertTile* expert_tiles = nullptr;                  // max_expert_tiles(C x k, N)
  float *expert_gate = nullptr, *expert_up = nullptr;  // C x k x M
  float* expert_out = nullptr;                         // C x k x E
  float* xl = nullptr;                                 // L x E: the rows whose logits are wanted
  float* logits = nullptr;                             // L x V
  __half *x16 = nullptr, *w16 = nullptr;  // T x max(E, Q, F); the largest layer matrix (T > kGemmMinTokens)
  // mmq's quantized activations: mmq_scratch_bytes(min(T, kMmqMaxTokens), max(E, Q, F)).
  void* mmq_scratch = nullptr;
  size_t mmq_scratch_bytes = 0;
};

// The model placed where the kernels read it: place(host, bytes) answers
// where a tensor's bytes are (a device copy; in a test, the host bytes).
// Unsupported for a weight type no kernel decodes or a bias the pass does not
// add; InvalidArgument for weights packed into CPU row panels (load the model
// mapped). The caches are the caller's to add.
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
  // An expert stack: the experts' views of one 3-D tensor, placed once.
  auto experts = [&](const std::vector<Matrix>& e) {
    if (e.empty()) return ExpertStack{};
    const Matrix& w = e.front();
    const size_t bytes = size_t(w.rows) * w.row_bytes;
    for (size_t i = 0; i < e.size(); ++i)
      if (e[i].panel_rows > 0 || e[i].data != w.data + i * bytes || e[i].type != w.type)
        fail<InvalidArgument>("{}'s experts are not one mapped tensor; the GPU reads a mapped model", w.name);
    if (!cuda::weight_type_supported(w.type))
      fail<Unsupported>("{} is {}, which no CUDA kernel decodes yet", w.name, tensor_type_name(w.type));
    return ExpertStack{w.type, w.rows, w.cols, int(e.size()), place(w.data, bytes * e.size())};
  };
  ModelOnDevice d;
  d.cfg = model.config();
  const ModelWeights& w = model.weights();
  d.token_embd = mat(w.token_embd);
  d.output = mat(w.output);
  d.output_norm = vec(w.output_norm);
  for (size_t li = 0; li < w.layers.size(); ++li) {
    const LayerWeights& lw = w.layers[li];
    const LayerSpec& spec = d.cfg.layers[li];
    if (!lw.b_gate.empty() || !lw.b_up.empty() || !lw.b_down.empty())
      fail<Unsupported>("the CUDA forward pass adds no dense FFN biases");
    const int n_rot = !spec.rope.enabled ? 0 : spec.rope.dims > 0 ? spec.rope.dims : spec.head_dim;
    const Rope::YarnRamp ramp = Rope::yarn_ramp(spec.rope, n_rot);
    Layer l{.attn_norm = vec(lw.attn_norm),
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
            .router = mat(lw.router),
            .router_b = vec(lw.router_b),
            .gate_exps = experts(lw.gate_exps),
            .up_exps = experts(lw.up_exps),
            .down_exps = experts(lw.down_exps),
            .gate_exps_b = vec(lw.gate_exps_b),
            .up_exps_b = vec(lw.up_exps_b),
            .down_exps_b = vec(lw.down_exps_b),
            .down_exps_scale = vec(lw.down_exps_scale)};
    for (const Mat* x : {&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down})  // the router never goes to cuBLAS
      d.largest_layer_matrix = std::max(d.largest_layer_matrix, x->elems());
    d.layers.push_back(l);
  }
  return d;
}

// How a matrix meets T tokens: up to kMaxMatvecTokens, matvec on the
// quantized blocks; past that, a format mmq takes (Q8_0, Q4_0, Q4_K, Q6_K)
// goes through mmq (int8 tensor cores on the blocks, read once) up to
// kMmqMaxTokens; the rest through F16 weights and cuBLAS above kGemmMinTokens,
// else matvec launches of kMaxMatvecTokens.
inline constexpr int kGemmMinTokens = 32;
inline constexpr int kMmqMaxTokens = 512;
// out [T][w.rows] = in [T][w.cols] w^T. may_gemm false: no cuBLAS whatever T
// (the output matrix, whose F16 copy would not fit the workspace).
template <class Ops>
void matmul(Ops& ops, const StepBuffers& b, const Mat& w, const float* in, int T, float* out, bool may_gemm = true) {
  if (T > kMaxMatvecTokens && T <= kMmqMaxTokens && mmq_supports(w.type)) {
    ops.mmq(w.type, w.data, w.rows, w.cols, in, T, out, b.mmq_scratch, b.mmq_scratch_bytes);
    return;
  }
  if (T > kGemmMinTokens && may_gemm) {
    ops.dequantize_rows_f16(w.type, w.data, w.rows, w.cols, b.w16);
    ops.convert_f32_to_f16(in, b.x16, int64_t(T) * w.cols);
    ops.gemm_f16(b.x16, b.w16, out, T, int(w.rows), int(w.cols));
    return;
  }
  for (int t = 0; t < T; t += kMaxMatvecTokens)
    ops.matvec(w.type, w.data, w.rows, w.cols, in + int64_t(t) * w.cols, std::min(kMaxMatvecTokens, T - t),
               out + int64_t(t) * w.rows);
}

// gate = act(gate) * up over n elements: SwiGLU, GeGLU or gpt-oss's clamped SwiGLU.
template <class Ops>
void gated_activation(Ops& ops, Activation act, float* gate, const float* up, int64_t n) {
  if (act == Activation::GeluTanh)
    ops.geglu_tanh(gate, up, gate, n);
  else if (act == Activation::SwigluOai)
    ops.swiglu_oai(gate, up, gate, n);
  else
    ops.swiglu(gate, up, gate, n);
}

// Tokens a mixture of experts takes at a time: its buffers' size (StepBuffers).
inline constexpr int kMoeChunkTokens = 256;

// out [T][E] = the experts' FFN of in [T][E] (moe.h): the router's logits for
// every token, then per chunk of tokens their routes, slots grouped by
// expert, gate and up over each slot's token, the activation, down, and the
// weighted sum. out may be in: a chunk overwrites only its own rows, after
// it has read them.
template <class Ops>
void moe_ffn(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, const float* in, int T,
             float* out) {
  const ModelConfig& c = m.cfg;
  const MoeSpec& moe = c.moe;
  const int E = c.n_embd, N = moe.n_expert, k = moe.n_used, M = moe.n_ff;
  // F32 arithmetic for every batch (no cuBLAS in F16): near ties route as on the CPU.
  matmul(ops, b, l.router, in, T, b.router_logits, false);
  if (l.router_b) ops.add_bias(b.router_logits, l.router_b, T, N);
  const MoeRouting routing{.n_expert = N,
                           .n_used = k,
                           .softmax_first = moe.gating == ExpertGating::SoftmaxTopK,
                           .normalize = moe.normalize,
                           .scale = moe.scale};
  for (int t0 = 0; t0 < T; t0 += kMoeChunkTokens) {
    const int n = std::min(kMoeChunkTokens, T - t0), slots = n * k, tiles = max_expert_tiles(slots, N);
    ops.moe_route(b.router_logits + int64_t(t0) * N, n, routing, b.expert_ids, b.expert_weights);
    ops.moe_group(b.expert_ids, slots, N, b.expert_order, b.expert_tiles, tiles);
    const float* x = in + int64_t(t0) * E;
    ops.matvec_experts(l.gate_exps, x, k, b.expert_order, b.expert_tiles, tiles, b.expert_gate);
    ops.matvec_experts(l.up_exps, x, k, b.expert_order, b.expert_tiles, tiles, b.expert_up);
    if (l.gate_exps_b) ops.add_expert_bias(b.expert_gate, l.gate_exps_b, b.expert_ids, slots, M);
    if (l.up_exps_b) ops.add_expert_bias(b.expert_up, l.up_exps_b, b.expert_ids, slots, M);
    gated_activation(ops, c.act, b.expert_gate, b.expert_up, int64_t(slots) * M);
    ops.matvec_experts(l.down_exps, b.expert_gate, 1, b.expert_order, b.expert_tiles, tiles, b.expert_out);
    if (l.down_exps_b) ops.add_expert_bias(b.expert_out, l.down_exps_b, b.expert_ids, slots, E);
    ops.moe_combine(b.expert_out, b.expert_ids, b.expert_weights, l.down_exps_scale, n, k, E, out + int64_t(t0) * E);
  }
}

// The step `u` (one KV group), its words copied to `words` where the kernels
// read them; leaves the wanted rows' logits in b.logits.
template <class Ops>
void forward_pass(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const gpu::StepUpload& u,
                  const int32_t* words) {
  const ModelConfig& c = m.cfg;
  const int T = u.num_tokens(), S = u.num_seqs(), B = u.table_width(), L = u.num_logits();
  const int E = c.n_embd, Q = c.q_dim(), K = c.kv_dim(), F = c.n_ff, hd = c.head_dim;
  const float eps = c.rms_eps;
  // The upload's sections.
  const int32_t* tokens = words + gpu::StepUpload::kHeaderWords;
  const int32_t* positions = tokens + T;
  const int32_t* seq_of = positions + T;
  const int32_t* slots = seq_of + T;
  const int32_t* tables = slots + T;
  const int32_t* logit_rows = tables + int64_t(S) * B + S;  // past seq_len[S]

  ops.embed_rows(m.token_embd.type, m.token_embd.data, m.token_embd.rows, m.token_embd.cols, tokens, T, b.x);
  if (c.embed_scale != 1.0f) ops.scale(b.x, c.embed_scale, int64_t(T) * E);  // the CPU's one float product
  const bool whole_qk = c.qk_norm == QkNorm::Whole;
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const Layer& l = m.layers[li];
    // Attention: x += post(wo(attend(rope(q), rope(k), v))), q, k, v from pre(x); pre and post are
    // rmsnorms where the model has them (Pre: before only; Post: after only; Sandwich: both).
    const float* in = b.x;
    if (l.attn_norm) {
      ops.rms_norm(b.x, l.attn_norm, b.h, T, E, eps);
      in = b.h;
    }
    matmul(ops, b, l.wq, in, T, b.q);
    matmul(ops, b, l.wk, in, T, b.k);
    matmul(ops, b, l.wv, in, T, b.v);
    if (l.bq) ops.add_bias(b.q, l.bq, T, Q);
    if (l.bk) ops.add_bias(b.k, l.bk, T, K);
    if (l.bv) ops.add_bias(b.v, l.bv, T, K);
    // Per head: rows of hd; whole: a token's Q (or K) is one row.
    if (l.q_norm) ops.rms_norm(b.q, l.q_norm, b.q, whole_qk ? T : T * c.n_head, whole_qk ? Q : hd, eps);
    if (l.k_norm) ops.rms_norm(b.k, l.k_norm, b.k, whole_qk ? T : T * c.n_head_kv, whole_qk ? K : hd, eps);
    ops.rope(b.q, positions, T, c.n_head, hd, l.rope);
    ops.rope(b.k, positions, T, c.n_head_kv, hd, l.rope);
    ops.store_kv(b.k, b.v, slots, T, K, m.k_cache[li], m.v_cache[li]);
    ops.paged_attention({.q = b.q,
                         .k_cache = m.k_cache[li],
                         .v_cache = m.v_cache[li],
                         .seq_index = seq_of,
                         .positions = positions,
                         .block_tables = tables,
                         .out = b.attn,
                         .n_tokens = T,
                         .n_head = c.n_head,
                         .n_kv_head = c.n_head_kv,
                         .head_dim = hd,
                         .block_size = m.block_size,
                         .max_blocks_per_seq = B,
                         .scale = c.attn_scale,
                         .softcap = c.attn_softcap,
                         .sliding_window = l.window,
                         .sinks = l.sinks});
    matmul(ops, b, l.wo, b.attn, T, b.h);
    if (l.bo) ops.add_bias(b.h, l.bo, T, E);
    if (l.attn_post_norm) ops.rms_norm(b.h, l.attn_post_norm, b.h, T, E, eps);
    if (c.residual_scale != 1.0f) ops.scale(b.h, c.residual_scale, int64_t(T) * E);  // granite
    ops.add(b.x, b.h, int64_t(T) * E);
    // FFN: x += post(down(act(gate(h)) * up(h))), h = pre(x), or the experts' sum over h.
    in = b.x;
    if (l.ffn_norm) {
      ops.rms_norm(b.x, l.ffn_norm, b.h, T, E, eps);
      in = b.h;
    }
    if (c.moe.n_expert > 0) {
      moe_ffn(ops, m, b, l, in, T, b.h);
    } else {
      matmul(ops, b, l.gate, in, T, b.gate);
      matmul(ops, b, l.up, in, T, b.up);
      gated_activation(ops, c.act, b.gate, b.up, int64_t(T) * F);
      matmul(ops, b, l.down, b.gate, T, b.h);
    }
    if (l.ffn_post_norm) ops.rms_norm(b.h, l.ffn_post_norm, b.h, T, E, eps);
    if (c.residual_scale != 1.0f) ops.scale(b.h, c.residual_scale, int64_t(T) * E);
    ops.add(b.x, b.h, int64_t(T) * E);
  }
  // Logits for the wanted rows only: gather, norm, the output matrix.
  ops.gather_rows(b.x, logit_rows, L, E, b.xl);
  ops.rms_norm(b.xl, m.output_norm, b.xl, L, E, eps);
  matmul(ops, b, m.output, b.xl, L, b.logits, false);
  if (c.logit_scale != 1.0f || c.final_softcap > 0)
    ops.scale_softcap(b.logits, c.logit_scale, c.final_softcap, int64_t(L) * c.n_vocab);
}

}  // namespace pagoda::cuda
