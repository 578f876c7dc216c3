// One step's forward pass as the kernels' launches, written once over `Ops`:
// CudaDevice runs it with the real launchers on its stream; a test runs it
// with the kernels' own source on the CPU and compares the logits with the
// CPU model's (tests/cuda/forward_emulation_test.cpp), so the pass's buffers,
// offsets and shapes are checked where no GPU is. Ops has a method per
// launcher, with the launcher's arguments less the stream, that throws on
// failure; gemm_f16 is `out = x16 w16^T`. The model's side is
// model_on_device.h.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/attention.h"
#include "cuda/delta_net.h"
#include "cuda/matvec.h"
#include "cuda/mmq.h"
#include "cuda/model_on_device.h"
#include "cuda/moe.h"
#include "cuda/norm_rope_act.h"
#include "gpu/step_upload.h"

namespace pagoda::cuda {

// A step's activations (T tokens, L logits rows, E n_embd, Q, K and F the
// widest layer's q_dim, kv_dim and n_ff, V n_vocab).
struct StepBuffers {
  float *x = nullptr, *h = nullptr;           // T x E: the residual stream, a normed or projected copy
  float *q = nullptr, *attn = nullptr;        // T x Q
  float* attn_split = nullptr;                // kAttentionSplitScratchFloats: paged_attention's split contexts
  float *qg = nullptr, *attn_gate = nullptr;  // T x 2Q, T x Q: the query with its gate, the gate (qwen35)
  float *k = nullptr, *v = nullptr;           // T x K
  float *gate = nullptr, *up = nullptr;       // T x F
  // A mixture of experts' (N n_expert, k n_used, M moe.n_ff), for kMoeChunkTokens tokens at a time:
  float* router_logits = nullptr;                      // T x N
  int32_t* expert_ids = nullptr;                       // C x k, C = min(T, kMoeChunkTokens): the slots' experts
  float* expert_weights = nullptr;                     // C x k
  int32_t* expert_order = nullptr;                     // C x k: the slots by expert (moe_group)
  ExpertTile* expert_tiles = nullptr;                  // max_expert_tiles(C x k, N)
  float *expert_gate = nullptr, *expert_up = nullptr;  // C x k x M
  float* expert_out = nullptr;                         // C x k x E
  // mmq_experts' quantized activations: the larger of C rows of E and C x k rows of M.
  void* expert_scratch = nullptr;
  size_t expert_scratch_bytes = 0;
  float *shexp_gate = nullptr, *shexp_up = nullptr;  // T x moe.n_ff_shared: the shared expert's hidden rows
  float* shexp_out = nullptr;                        // T x E
  float* shexp_logit = nullptr;                      // T: its gate's logits
  // Experts beside a dense MLP (gemma4's 26B-A4B), T x E each: their input, the router's, their output.
  float *beside_in = nullptr, *beside_router = nullptr, *beside_out = nullptr;
  // A recurrent layer's (C conv channels, Vd = H_v dv), and each sequence's tokens:
  float *mixed = nullptr, *conv = nullptr;           // T x C: the projection, then convolved
  float *z = nullptr, *core = nullptr;               // T x Vd: the output gate, the heads' reads
  float *beta = nullptr, *decay = nullptr;           // T x H_v
  int32_t *seq_first = nullptr, *seq_end = nullptr;  // S: sequence_ranges
  // gemma4's per-layer inputs (P wide, W = n_layer P):
  float *pl = nullptr, *pl_tok = nullptr;  // T x W: every layer's input, the token table's rows
  float* pl_gate = nullptr;                // T x P
  float* xl = nullptr;                     // L x E: the rows whose logits are wanted
  float* logits = nullptr;                 // L x V
  __half *x16 = nullptr, *w16 = nullptr;   // T x widest_input; the largest layer matrix (T > kGemmMinTokens)
  // mmq's quantized activations: mmq_scratch_bytes(min(T, kMmqMaxTokens), widest_input).
  void* mmq_scratch = nullptr;
  size_t mmq_scratch_bytes = 0;
};

// How a matrix meets T tokens, in a format mmq takes (mmq_supports: Q8_0,
// Q4_0, Q5_0, IQ4_NL, MXFP4 and the K-quants but Q2_K): up to
// kMaxMatvecTokens, mmvq (dp4a on 8-bit activations); past that mmq (int8
// tensor cores on the blocks, read once) up to kMmqMaxTokens. The rest, and
// mmq's formats past kMmqMaxTokens: F16 weights and cuBLAS above
// kGemmMinTokens, else matvec (F32 activations) launches of kMaxMatvecTokens.
inline constexpr int kGemmMinTokens = 32;
inline constexpr int kMmqMaxTokens = 512;
// out [T][w.rows] = in [T][w.cols] w^T. may_gemm false: no cuBLAS whatever T
// (the output matrix, whose F16 copy would not fit the workspace).
template <class Ops>
void matmul(Ops& ops, const StepBuffers& b, const Mat& w, const float* in, int T, float* out, bool may_gemm = true) {
  if (T <= kMaxMatvecTokens && mmq_supports(w.type)) {
    ops.mmvq(w.type, w.data, w.rows, w.cols, in, T, out, b.mmq_scratch, b.mmq_scratch_bytes);
    return;
  }
  if (T <= kMmqMaxTokens && mmq_supports(w.type)) {
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

// x [T][k] quantized once into mmq's scratch for the matrices that read it
// (q, k and v; gate and up): where there are two or more (null ones, rows 0,
// skipped), all in mmq's formats with one activation block and width, and T
// goes to mmvq or mmq. Then matmul_quantized() reads it; false: nothing done.
template <class Ops>
bool quantize_once(Ops& ops, const StepBuffers& b, std::initializer_list<const Mat*> ws, const float* in, int T) {
  const Mat* first = nullptr;
  int n = 0;
  for (const Mat* w : ws) {
    if (w->rows == 0) continue;
    if (mmq_activation_block(w->type) == 0 ||
        (first && (mmq_activation_block(w->type) != mmq_activation_block(first->type) || w->cols != first->cols)))
      return false;
    if (!first) first = w;
    ++n;
  }
  if (n < 2 || T > kMmqMaxTokens) return false;
  ops.mmq_quantize(first->type, in, T, first->cols, b.mmq_scratch, b.mmq_scratch_bytes);
  return true;
}

// out [T][w.rows] = x w^T, x as quantize_once left it: mmvq for a few tokens, else mmq.
template <class Ops>
void matmul_quantized(Ops& ops, const StepBuffers& b, const Mat& w, int T, float* out) {
  if (T <= kMaxMatvecTokens)
    ops.mmvq_quantized(w.type, w.data, w.rows, w.cols, b.mmq_scratch, b.mmq_scratch_bytes, T, out);
  else
    ops.mmq_quantized(w.type, w.data, w.rows, w.cols, b.mmq_scratch, b.mmq_scratch_bytes, T, out);
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

// out [T][E] = down(act(gate(in)) * up(in)), in [T][E] quantized once for gate and up where both take it.
template <class Ops>
void dense_ffn(Ops& ops, const ModelConfig& c, const StepBuffers& b, const Layer& l, const float* in, int T,
               float* out) {
  if (quantize_once(ops, b, {&l.gate, &l.up}, in, T)) {
    matmul_quantized(ops, b, l.gate, T, b.gate);
    matmul_quantized(ops, b, l.up, T, b.up);
  } else {
    matmul(ops, b, l.gate, in, T, b.gate);
    matmul(ops, b, l.up, in, T, b.up);
  }
  gated_activation(ops, c.act, b.gate, b.up, int64_t(T) * l.n_ff);
  matmul(ops, b, l.down, b.gate, T, out);
}

// Tokens a mixture of experts takes at a time: its buffers' size (StepBuffers).
inline constexpr int kMoeChunkTokens = 256;

// out [T][E] = the experts' FFN of in [T][E] (moe.h): the router's logits for
// every token, then per chunk of tokens their routes, slots grouped by
// expert, gate and up over each slot's token, the activation, down, and the
// weighted sum; then a shared expert's gated output where the model has one
// (it reads in first). out may be in: a chunk overwrites only its own rows,
// after it has read them.
template <class Ops>
void moe_ffn(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, const float* in, int T, float* out,
             const float* router_in = nullptr) {
  const ModelConfig& c = m.cfg;
  const MoeSpec& moe = c.moe;
  const int E = c.n_embd, N = moe.n_expert, k = moe.n_used, M = moe.n_ff, SH = moe.n_ff_shared;
  if (SH > 0) {  // out += sigmoid(shexp_gate . x) * down(silu(gate(x)) * up(x)), per token
    if (quantize_once(ops, b, {&l.gate_shexp, &l.up_shexp}, in, T)) {
      matmul_quantized(ops, b, l.gate_shexp, T, b.shexp_gate);
      matmul_quantized(ops, b, l.up_shexp, T, b.shexp_up);
    } else {
      matmul(ops, b, l.gate_shexp, in, T, b.shexp_gate);
      matmul(ops, b, l.up_shexp, in, T, b.shexp_up);
    }
    ops.swiglu(b.shexp_gate, b.shexp_up, b.shexp_gate, int64_t(T) * SH);
    matmul(ops, b, l.down_shexp, b.shexp_gate, T, b.shexp_out);
    ops.row_dot(in, l.shexp_gate, T, E, b.shexp_logit);
  }
  // F32 arithmetic for every batch (no cuBLAS in F16): near ties route as on the CPU.
  matmul(ops, b, l.router, router_in ? router_in : in, T, b.router_logits, false);
  if (l.router_b) ops.add_bias(b.router_logits, l.router_b, T, N);
  const MoeRouting routing{.n_expert = N,
                           .n_used = k,
                           .softmax_first = moe.gating == ExpertGating::SoftmaxTopK,
                           .normalize = moe.normalize,
                           .scale = moe.scale};
  for (int t0 = 0; t0 < T; t0 += kMoeChunkTokens) {
    // mmq's formats on 8-bit activations: past matvec's batches int8 tensor-core tiles of 32
    // slots an expert, else mmvq's tiles of 8; other formats matvec's tiles of 8.
    const int n = std::min(kMoeChunkTokens, T - t0), slots = n * k;
    const bool int8 =
        mmq_supports(l.gate_exps.type) && l.up_exps.type == l.gate_exps.type && mmq_supports(l.down_exps.type);
    const bool tensor_cores = int8 && n > kMaxMatvecTokens;
    const int tile = tensor_cores ? kMmqExpertSlots : kExpertTileSlots, tiles = max_expert_tiles(slots, N, tile);
    ops.moe_route(b.router_logits + int64_t(t0) * N, n, routing, b.expert_ids, b.expert_weights);
    ops.moe_group(b.expert_ids, slots, N, tile, b.expert_order, b.expert_tiles, tiles);
    const float* x = in + int64_t(t0) * E;
    auto experts = [&](const ExpertStack& w, const float* xs, int x_rows, int x_per_slot, float* out_rows) {
      if (int8) {  // one quantization of xs serves gate and up (the same type)
        if (&w != &l.up_exps) ops.mmq_quantize(w.type, xs, x_rows, w.cols, b.expert_scratch, b.expert_scratch_bytes);
        if (tensor_cores)
          ops.mmq_experts(w, b.expert_scratch, b.expert_scratch_bytes, x_rows, x_per_slot, b.expert_order,
                          b.expert_tiles, tiles, out_rows);
        else
          ops.mmvq_experts(w, b.expert_scratch, b.expert_scratch_bytes, x_rows, x_per_slot, b.expert_order,
                           b.expert_tiles, tiles, out_rows);
      } else {
        ops.matvec_experts(w, xs, x_per_slot, b.expert_order, b.expert_tiles, tiles, out_rows);
      }
    };
    experts(l.gate_exps, x, n, k, b.expert_gate);
    experts(l.up_exps, x, n, k, b.expert_up);
    if (l.gate_exps_b) ops.add_expert_bias(b.expert_gate, l.gate_exps_b, b.expert_ids, slots, M);
    if (l.up_exps_b) ops.add_expert_bias(b.expert_up, l.up_exps_b, b.expert_ids, slots, M);
    gated_activation(ops, c.act, b.expert_gate, b.expert_up, int64_t(slots) * M);
    experts(l.down_exps, b.expert_gate, slots, 1, b.expert_out);
    if (l.down_exps_b) ops.add_expert_bias(b.expert_out, l.down_exps_b, b.expert_ids, slots, E);
    ops.moe_combine(b.expert_out, b.expert_ids, b.expert_weights, l.down_exps_scale, n, k, E, out + int64_t(t0) * E);
  }
  if (SH > 0) ops.add_gated(out, b.shexp_out, b.shexp_logit, T, E);
}

// The step's upload sections where the kernels read them (gpu/step_upload.h).
struct StepWords {
  int T = 0, S = 0, G = 0, B = 0, L = 0;
  const int32_t *tokens = nullptr, *positions = nullptr, *seq_of = nullptr, *slots = nullptr, *tables = nullptr,
                *logit_rows = nullptr, *state_in = nullptr, *state_out = nullptr;
  StepWords(const gpu::StepUpload& u, const int32_t* words)
      : T(u.num_tokens()), S(u.num_seqs()), G(u.num_groups()), B(u.table_width()), L(u.num_logits()) {
    tokens = words + gpu::StepUpload::kHeaderWords;
    positions = tokens + T;
    seq_of = positions + T;
    slots = seq_of + T;
    tables = slots + int64_t(G) * T;
    logit_rows = tables + int64_t(S) * G * B + S;  // past seq_len[S]
    state_in = logit_rows + L;
    state_out = state_in + S;
  }
  // KV group g's slots [T], and its tables: sequence s's at group_tables(g) + s * G * B.
  const int32_t* group_slots(int g) const { return slots + int64_t(g) * T; }
  const int32_t* group_tables(int g) const { return tables + int64_t(g) * B; }
};

// out [T][E] = wo(attend(rope(q), rope(k), v)) (times sigmoid of the query's
// gate where the model has one), q, k and v from in [T][E] in the layer's own
// shape; a layer sharing K/V (gemma4) projects q alone and reads its source's.
template <class Ops>
void attention_block(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, const float* in,
                     const StepWords& s, float* out) {
  const ModelConfig& c = m.cfg;
  const int T = s.T, E = c.n_embd, hd = l.head_dim, Q = l.n_head * hd, K = l.n_kv_head * hd;
  const float eps = c.rms_eps;
  const Mat none;
  const bool shared = quantize_once(ops, b, {&l.wq, l.own_kv ? &l.wk : &none, l.own_kv ? &l.wv : &none}, in, T);
  auto project = [&](const Mat& w, float* y) {
    if (shared)
      matmul_quantized(ops, b, w, T, y);
    else
      matmul(ops, b, w, in, T, y);
  };
  if (c.attn_output_gate) {
    project(l.wq, b.qg);
    ops.split_query_gate(b.qg, T, l.n_head, hd, b.q, b.attn_gate);
  } else {
    project(l.wq, b.q);
  }
  if (l.bq) ops.add_bias(b.q, l.bq, T, Q);
  // Per head: rows of hd; whole: a token's Q (or K) is one row.
  const bool whole_qk = c.qk_norm == QkNorm::Whole;
  if (l.q_norm) ops.rms_norm(b.q, l.q_norm, b.q, whole_qk ? T : T * l.n_head, whole_qk ? Q : hd, eps);
  ops.rope(b.q, s.positions, T, l.n_head, hd, l.rope);
  if (c.q_temperature != 0) ops.query_temperature(b.q, s.positions, T, Q, c.q_temperature, c.q_temperature_floor);
  __half *k_cache = m.k_cache[size_t(l.cache)], *v_cache = m.v_cache[size_t(l.cache)];
  if (l.own_kv) {
    project(l.wk, b.k);
    if (l.wv.rows > 0)
      project(l.wv, b.v);
    else
      ops.copy(b.v, b.k, int64_t(T) * K);  // V is K's projection (gemma4's global layers), before K's norm
    if (l.bk) ops.add_bias(b.k, l.bk, T, K);
    if (l.bv) ops.add_bias(b.v, l.bv, T, K);
    if (l.k_norm) ops.rms_norm(b.k, l.k_norm, b.k, whole_qk ? T : T * l.n_kv_head, whole_qk ? K : hd, eps);
    if (c.v_norm) ops.rms_norm(b.v, nullptr, b.v, T * l.n_kv_head, hd, eps);
    ops.rope(b.k, s.positions, T, l.n_kv_head, hd, l.rope);
    ops.store_kv(b.k, b.v, s.group_slots(l.kv_group), T, K, l.kv_stride, k_cache, v_cache);
  }
  ops.paged_attention({.q = b.q,
                       .k_cache = k_cache,
                       .v_cache = v_cache,
                       .seq_index = s.seq_of,
                       .positions = s.positions,
                       .block_tables = s.group_tables(l.kv_group),
                       .out = b.attn,
                       .n_tokens = T,
                       .n_head = l.n_head,
                       .n_kv_head = l.n_kv_head,
                       .head_dim = hd,
                       .block_size = m.block_size,
                       .max_blocks_per_seq = s.B,
                       .seq_table_stride = int64_t(s.G) * s.B,
                       .kv_stride = l.kv_stride,
                       .scale = c.attn_scale,
                       .softcap = c.attn_softcap,
                       .sliding_window = l.window,
                       .sinks = l.sinks,
                       .split_scratch = b.attn_split});
  if (c.attn_output_gate) ops.sigmoid_gate(b.attn, b.attn_gate, int64_t(T) * Q);
  matmul(ops, b, l.wo, b.attn, T, out);
  if (l.bo) ops.add_bias(out, l.bo, T, E);
}

// out [T][E] = a Gated DeltaNet layer over in [T][E] (model/delta_net.h): the
// projections, the convolution and the recurrence on each sequence's state
// (delta_net.h), each head's read RMS-normed and gated by silu(z), ssm_out.
template <class Ops>
void delta_net_block(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, const float* in,
                     const StepWords& s, float* out) {
  const DeltaNetSpec& d = m.cfg.delta_net;
  const int T = s.T, C = d.conv_channels(), Hv = d.n_v_heads, dv = d.head_v_dim, dk = d.head_k_dim;
  const float eps = m.cfg.rms_eps;
  const DeltaStates states{.layer = m.states + int64_t(l.state_index) * m.state_layer_floats,
                           .buffer_floats = m.state_buffer_floats,
                           .in = s.state_in,
                           .out = s.state_out,
                           .seq_of = s.seq_of,
                           .first = b.seq_first,
                           .end = b.seq_end};
  matmul(ops, b, l.qkv, in, T, b.mixed);
  matmul(ops, b, l.z_gate, in, T, b.z);
  matmul(ops, b, l.beta, in, T, b.beta);
  matmul(ops, b, l.alpha, in, T, b.decay);
  ops.delta_conv(b.mixed, l.conv, d.conv_kernel, C, T, states, b.conv);
  ops.delta_prepare(b.conv, C, d.n_k_heads, dk, eps, b.decay, b.beta, l.a, l.dt_bias, Hv, T);
  ops.delta_rule(b.conv, C, d.n_k_heads, Hv, dk, dv, b.decay, b.beta, 1.0f / std::sqrt(float(dk)), s.S, states,
                 d.conv_state_floats(), b.core);
  ops.rms_norm(b.core, l.ssm_norm, b.core, T * Hv, dv, eps);
  ops.swiglu(b.z, b.core, b.z, int64_t(T) * Hv * dv);
  matmul(ops, b, l.ssm_out, b.z, T, out);
}

// gemma4's 26B-A4B (MoeSpec::dense_beside): b.h [T][E] = post_norm_1(MLP(in))
// + post_norm_2(experts(pre_norm_2(x))), the router reading rmsnorm(x) /
// sqrt(E) * router_in_scale; x is the residual stream.
template <class Ops>
void experts_beside_mlp(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, const float* in,
                        int T) {
  const ModelConfig& c = m.cfg;
  const int E = c.n_embd;
  const float eps = c.rms_eps;
  ops.rms_norm(b.x, l.pre_norm_2, b.beside_in, T, E, eps);
  ops.rms_norm(b.x, l.router_in_scale, b.beside_router, T, E, eps);
  ops.scale(b.beside_router, 1.0f / std::sqrt(float(E)), int64_t(T) * E);
  moe_ffn(ops, m, b, l, b.beside_in, T, b.beside_out, b.beside_router);
  dense_ffn(ops, c, b, l, in, T, b.h);
  ops.rms_norm(b.h, l.post_norm_1, b.h, T, E, eps);
  ops.rms_norm(b.beside_out, l.post_norm_2, b.beside_out, T, E, eps);
  ops.add(b.h, b.beside_out, int64_t(T) * E);
}

// gemma4's per-layer inputs, b.pl [T][n_layer P] (model/per_layer_inputs.h):
// the embeddings x projected, over sqrt(E), RMS-normed per layer's slice,
// plus the token table's rows times sqrt(P), over sqrt(2).
template <class Ops>
void per_layer_inputs(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const StepWords& s) {
  const ModelConfig& c = m.cfg;
  const int T = s.T, P = c.n_embd_per_layer;
  const int64_t W = int64_t(c.n_layer) * P;
  matmul(ops, b, m.per_layer_model_proj, b.x, T, b.pl);
  ops.scale(b.pl, 1.0f / std::sqrt(float(c.n_embd)), T * W);
  ops.rms_norm(b.pl, m.per_layer_proj_norm, b.pl, T * c.n_layer, P, c.rms_eps);
  const Mat& tok = m.per_layer_token_embd;
  ops.embed_rows(tok.type, tok.data, tok.rows, tok.cols, s.tokens, T, b.pl_tok);
  ops.blend(b.pl, b.pl_tok, std::sqrt(float(P)), 1.0f / std::sqrt(2.0f), T * W);
}

// x += rmsnorm(proj(gelu(inp_gate x) * pl[.][li])), layer li's per-layer input branch.
template <class Ops>
void add_per_layer_input(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const Layer& l, int li, int T) {
  const ModelConfig& c = m.cfg;
  const int P = c.n_embd_per_layer, E = c.n_embd;
  matmul(ops, b, l.per_layer_inp_gate, b.x, T, b.pl_gate);
  ops.gelu_times(b.pl_gate, b.pl + int64_t(li) * P, T, P, int64_t(c.n_layer) * P);
  matmul(ops, b, l.per_layer_proj, b.pl_gate, T, b.h);
  ops.rms_norm(b.h, l.per_layer_post_norm, b.h, T, E, c.rms_eps);
  ops.add(b.x, b.h, int64_t(T) * E);
}

// The step `u`, its words copied to `words` where the kernels
// read them; leaves the wanted rows' logits in b.logits.
template <class Ops>
void forward_pass(Ops& ops, const ModelOnDevice& m, const StepBuffers& b, const gpu::StepUpload& u,
                  const int32_t* words) {
  const ModelConfig& c = m.cfg;
  const StepWords s(u, words);
  const int T = s.T, E = c.n_embd;
  const float eps = c.rms_eps;
  ops.embed_rows(m.token_embd.type, m.token_embd.data, m.token_embd.rows, m.token_embd.cols, s.tokens, T, b.x);
  if (c.embed_scale != 1.0f) ops.scale(b.x, c.embed_scale, int64_t(T) * E);  // the CPU's one float product
  if (c.n_recurrent_layers() > 0) ops.sequence_ranges(s.seq_of, T, b.seq_first, b.seq_end);
  if (c.n_embd_per_layer > 0) per_layer_inputs(ops, m, b, s);
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const Layer& l = m.layers[li];
    // Attention (or a recurrent layer): x += post(mix(pre(x))); pre and post are rmsnorms where the
    // model has them (Pre: before only; Post: after only; Sandwich: both).
    const float* in = b.x;
    if (l.attn_norm) {
      ops.rms_norm(b.x, l.attn_norm, b.h, T, E, eps);
      in = b.h;
    }
    if (l.recurrent)
      delta_net_block(ops, m, b, l, in, s, b.h);
    else
      attention_block(ops, m, b, l, in, s, b.h);
    if (l.attn_post_norm) ops.rms_norm(b.h, l.attn_post_norm, b.h, T, E, eps);
    if (c.residual_scale != 1.0f) ops.scale(b.h, c.residual_scale, int64_t(T) * E);  // granite
    ops.add(b.x, b.h, int64_t(T) * E);
    // FFN: x += post(down(act(gate(h)) * up(h))), h = pre(x), or the experts' sum over h.
    in = b.x;
    if (l.ffn_norm) {
      ops.rms_norm(b.x, l.ffn_norm, b.h, T, E, eps);
      in = b.h;
    }
    if (c.moe.n_expert > 0 && c.moe.dense_beside) {
      experts_beside_mlp(ops, m, b, l, in, T);
    } else if (c.moe.n_expert > 0) {
      moe_ffn(ops, m, b, l, in, T, b.h);
    } else {
      dense_ffn(ops, c, b, l, in, T, b.h);
    }
    if (l.ffn_post_norm) ops.rms_norm(b.h, l.ffn_post_norm, b.h, T, E, eps);
    if (c.residual_scale != 1.0f) ops.scale(b.h, c.residual_scale, int64_t(T) * E);
    ops.add(b.x, b.h, int64_t(T) * E);
    if (c.n_embd_per_layer > 0) add_per_layer_input(ops, m, b, l, int(li), T);
    if (l.out_scale != 1.0f) ops.scale(b.x, l.out_scale, int64_t(T) * E);
  }
  // Logits for the wanted rows only: gather, norm, the output matrix.
  ops.gather_rows(b.x, s.logit_rows, s.L, E, b.xl);
  ops.rms_norm(b.xl, m.output_norm, b.xl, s.L, E, eps);
  matmul(ops, b, m.output, b.xl, s.L, b.logits, false);
  if (c.logit_scale != 1.0f || c.final_softcap > 0)
    ops.scale_softcap(b.logits, c.logit_scale, c.final_softcap, int64_t(s.L) * c.n_vocab);
}

}  // namespace pagoda::cuda
