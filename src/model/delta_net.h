// A Gated DeltaNet layer (Qwen3.5/3.6's linear attention) over a batch, in
// place of attention: each sequence carries a recurrent state (a short
// convolution's last inputs and a matrix per value head) from one pass to
// the next instead of K/V, read from the batch's state_in buffer and left in
// its state_out buffer (kv/types.h).
//
// Per token x (n_embd, normed):
//   [q k v] = silu(causal_conv(qkv x))  C = 2 H_k dk + H_v dv channels, K taps
//   q, k    = L2-normalized per key head;  value head h reads key head h % H_k
//   decay   = exp(a_h softplus(alpha x + dt_bias)_h),  beta = sigmoid(beta x)_h
//   S_h     = delta rule (kernels/delta_net.h);  o_h = S_h q / sqrt(dk)
//   out     = ssm_out (rmsnorm(o_h) * silu(z_h)),  z = attn_gate x
// Projections run over every token at once; the convolution and the
// recurrence run each sequence's tokens in order, sequences and heads in parallel.
#pragma once

#include <vector>

#include "kv/batch.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/state_storage.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace pagoda {

class DeltaNet {
 public:
  // out (T x n_embd) for the batch's tokens x (T x n_embd); `seq_tokens`:
  // each sequence's token indices in position order (consecutive positions).
  void forward(const Batch& batch, const std::vector<std::vector<int>>& seq_tokens, const DeltaNetWeights& w,
               const ModelConfig& c, int layer, StateStorage& states, const float* x, float* out, ThreadPool& pool);

 private:
  void convolve(const Batch& batch, const std::vector<std::vector<int>>& seq_tokens, const DeltaNetWeights& w,
                const ModelConfig& c, int layer, StateStorage& states, ThreadPool& pool);

  AlignedFloats mixed_;  // T x C: the projection before the convolution
  AlignedFloats conv_;   // T x C: after it (and silu): q, k, v
  AlignedFloats z_;      // T x value_dim: the output gate, then the gated output
  AlignedFloats beta_;   // T x H_v: learning rates
  AlignedFloats decay_;  // T x H_v: alpha, then the decays
  AlignedFloats core_;   // T x value_dim: each head's read of its state
};

}  // namespace pagoda
