// A Gated DeltaNet layer's own steps on the device (model/delta_net.h says
// the whole layer; forward_pass.h runs its projections as matmuls around
// these). Each sequence's recurrent state lives in the state pool: buffer b
// of layer l at states + b * buffer_floats + the layer's offset, laid out as
// the CPU's StateStorage (the convolution's last K-1 inputs, (K-1) x C, then
// H_v matrices of dv x dk). The upload names each sequence's buffers
// (StepUpload::state_in/state_out; -1 reads zeros, or writes nothing), and
// its tokens are consecutive in the step, in position order.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda {

inline constexpr int kMaxDeltaHeadDim = 256;  // dk (Qwen3.5's 128)

// first[s], end[s]: the tokens of sequence s are first[s] .. end[s]-1.
//   seq_of  [n_tokens] int32, each sequence's tokens together
cudaError_t sequence_ranges(const int32_t* seq_of, int n_tokens, int32_t* first, int32_t* end, cudaStream_t stream);

// Where a step's recurrent layer reads and writes its state.
struct DeltaStates {
  float* layer = nullptr;  // buffer 0's part for this layer; buffer b's is b * buffer_floats further
  int64_t buffer_floats = 0;
  const int32_t* in = nullptr;   // [n_seqs] buffer ids, -1: zeros
  const int32_t* out = nullptr;  // [n_seqs] buffer ids, -1: none (a graph's padding)
  const int32_t* seq_of = nullptr;
  const int32_t* first = nullptr;  // sequence_ranges'
  const int32_t* end = nullptr;
};

// out[t][c] = silu(sum over taps j of w[j][c] * input(t - (K-1) + j)[c]), the
// inputs a sequence's history: its state's K-1 rows, then its tokens' mixed
// rows; each sequence's last K-1 inputs become its out state.
//   mixed  [n_tokens][C] F32, conv_w [K][C] F32, out [n_tokens][C] F32
cudaError_t delta_conv(const float* mixed, const float* conv_w, int K, int C, int n_tokens, const DeltaStates& st,
                       float* out, cudaStream_t stream);

// Per token: q and k (the first 2 H_k heads of dk in conv) to unit length
// (x / sqrt(sum x^2 + eps)); decay[t][h] = exp(a[h] softplus(decay[t][h] +
// dt_bias[h])) and beta[t][h] = sigmoid(beta[t][h]), in place.
cudaError_t delta_prepare(float* conv, int C, int n_k_heads, int dk, float eps, float* decay, float* beta,
                          const float* a, const float* dt_bias, int n_v_heads, int n_tokens, cudaStream_t stream);

// The recurrence (kernels/delta_net.h's delta_net_step), each sequence's
// tokens in order on each value head h's matrix S (dv x dk; h reads key head
// h % H_k): S *= decay; S += beta (v - S k) k^T; core[t][h] = scale S q.
// The matrices start from the in buffer and end in the out buffer.
//   conv  [n_tokens][C]: q, k (H_k dk each), v (H_v dv)
//   core  [n_tokens][H_v dv] F32
cudaError_t delta_rule(const float* conv, int C, int n_k_heads, int n_v_heads, int dk, int dv, const float* decay,
                       const float* beta, float scale, int n_seqs, const DeltaStates& st, int64_t conv_state_floats,
                       float* core, cudaStream_t stream);

// Attention's output gate (qwen35): qg [n_tokens][n_head][2 hd] (per head the
// query, then its gate) split into q and gate [n_tokens][n_head][hd].
cudaError_t split_query_gate(const float* qg, int n_tokens, int n_head, int hd, float* q, float* gate,
                             cudaStream_t stream);

// x[i] /= 1 + exp(-gate[i]) (times sigmoid(gate), as the CPU rounds it).
cudaError_t sigmoid_gate(float* x, const float* gate, int64_t n, cudaStream_t stream);

}  // namespace pagoda::cuda
