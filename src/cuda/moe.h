// A mixture-of-experts FFN on the device (model/moe.h's MoeFfn): route each
// token to its k experts, group the (token, rank) slots by expert, run each
// expert's matrices over its slots a tile of up to kMaxMatvecTokens at a time
// (the weights read once a tile, in their GGUF blocks), then sum each
// token's k outputs, weighted, in the router's order. A slot's output is
// computed the same way whatever tile it lands in, so a token's result does
// not depend on the rest of the batch, and nothing here synchronizes with the
// host: a step is captured in a CUDA graph as any other. A shared expert
// (qwen35moe) is a dense FFN beside them, its output gated per token.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/matvec.h"
#include "gguf/types.h"

namespace pagoda::cuda {

inline constexpr int kMaxExperts = 512;                    // Qwen3.5's 512 experts; more are refused
inline constexpr int kMaxExpertsUsed = 32;                 // k
inline constexpr int kExpertTileSlots = kMaxMatvecTokens;  // matvec_experts' tiles (mmq_experts' are 32)

// How the router's logits become the chosen experts' weights (model/config.h MoeSpec).
struct MoeRouting {
  int n_expert = 0, n_used = 0;
  bool softmax_first = true;  // ExpertGating::SoftmaxTopK; false: TopKSoftmax
  bool normalize = true;      // the k weights over their sum
  float scale = 1.0f;         // then times this
};

// Every expert's matrix of one projection, stacked as the GGUF's 3-D tensor:
// expert e's rows x cols in `type` blocks start at data + e * stride (stride
// 0: rows times a row's bytes; gemma4's fused gate-and-up tensor interleaves
// the two, each expert's gate then its up, so each stack's stride is twice that).
struct ExpertStack {
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  int n_expert = 0;
  const void* data = nullptr;
  int64_t stride = 0;
};

// Up to a tile's slots (kExpertTileSlots for matvec_experts, kMmqExpertSlots
// for mmq_experts) of one expert: order[first .. first + count).
// count 0: an unused tile (the grid is sized for the most a step can need).
struct ExpertTile {
  int32_t expert = 0, first = 0, count = 0;
};

// The most tiles of tile_slots n_slots slots over n_expert experts can take.
inline int max_expert_tiles(int n_slots, int n_expert, int tile_slots = kExpertTileSlots) {
  return (n_slots + tile_slots - 1) / tile_slots + (n_slots < n_expert ? n_slots : n_expert);
}

// route_tokens (model/moe.h): each token's k experts, best first (ties: the
// lower index; a NaN ranks last), and their weights.
//   logits   [n_tokens][n_expert] F32, the router's output (its bias added)
//   experts  [n_tokens][n_used] int32
//   weights  [n_tokens][n_used] F32
// cudaErrorInvalidValue for n_expert outside 1..kMaxExperts or n_used outside 1..min(n_expert, kMaxExpertsUsed).
cudaError_t moe_route(const float* logits, int n_tokens, const MoeRouting& r, int32_t* experts, float* weights,
                      cudaStream_t stream);

// The slots (a token's rank r is slot token * n_used + r) grouped by expert:
// order holds expert 0's slots in increasing order, then expert 1's, ...;
// tiles[0 .. max_tiles) cut each expert's run into tiles of up to tile_slots,
// the rest count 0.
//   experts  [n_slots] int32 in 0..n_expert-1
//   order    [n_slots] int32
//   tiles    [max_tiles] (max_expert_tiles(n_slots, n_expert, tile_slots))
cudaError_t moe_group(const int32_t* experts, int n_slots, int n_expert, int tile_slots, int32_t* order,
                      ExpertTile* tiles, int max_tiles, cudaStream_t stream);

// For each tile's slots s: out[s][r] = sum_i W_e[r][i] * x[s / x_per_slot][i],
// e the tile's expert, accumulated as matvec does. x_per_slot: n_used where
// the slots of a token share its input (gate, up); 1 where each has its own (down).
//   x    [n_slots / x_per_slot][w.cols] F32
//   out  [n_slots][w.rows] F32 (must not overlap x)
cudaError_t matvec_experts(const ExpertStack& w, const float* x, int x_per_slot, const int32_t* order,
                           const ExpertTile* tiles, int max_tiles, float* out, cudaStream_t stream);

// y[s][i] += bias[experts[s]][i] (gpt-oss's expert biases).
//   y     [n_slots][n] F32
//   bias  [n_expert][n] F32
cudaError_t add_expert_bias(float* y, const float* bias, const int32_t* experts, int n_slots, int n,
                            cudaStream_t stream);

// out[t][i] = sum over r, in order, of weights[t][r] * (y[t * n_used + r][i] * scale[experts[..]]),
// the scale (ffn_down_exps.scale) left out when null.
//   y    [n_tokens * n_used][n] F32
//   out  [n_tokens][n] F32 (must not overlap y)
cudaError_t moe_combine(const float* y, const int32_t* experts, const float* weights, const float* expert_scale,
                        int n_tokens, int n_used, int n, float* out, cudaStream_t stream);

// logit[t] = sum_i w[i] * x[t][i]: the shared expert's gate (qwen35moe's
// ffn_gate_inp_shexp), summed in double as the CPU does.
//   x  [n_tokens][n] F32, w [n] F32, logit [n_tokens] F32
cudaError_t row_dot(const float* x, const float* w, int n_tokens, int n, float* logit, cudaStream_t stream);

// out[t][i] += sigmoid(logit[t]) * y[t][i]: the shared expert's output, gated.
//   out, y  [n_tokens][n] F32
cudaError_t add_gated(float* out, const float* y, const float* logit, int n_tokens, int n, cudaStream_t stream);

}  // namespace pagoda::cuda
