#include "cuda/delta_net.h"
#include "cuda/delta_net_kernels.cuh"

namespace pagoda::cuda {
namespace {

unsigned elementwise_blocks(int64_t n) { return detail::grid_stride_blocks(n, detail::kDeltaThreads); }

bool states_given(const DeltaStates& st) { return st.layer && st.in && st.out && st.seq_of && st.first && st.end; }

}  // namespace

cudaError_t sequence_ranges(const int32_t* seq_of, int n_tokens, int32_t* first, int32_t* end, cudaStream_t stream) {
  if (n_tokens < 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::sequence_ranges_kernel<<<unsigned((n_tokens + detail::kDeltaThreads - 1) / detail::kDeltaThreads),
                                   detail::kDeltaThreads, 0, stream>>>(seq_of, n_tokens, first, end);
  return cudaGetLastError();
}

cudaError_t delta_conv(const float* mixed, const float* conv_w, int K, int C, int n_tokens, const DeltaStates& st,
                       float* out, cudaStream_t stream) {
  if (K < 2 || C <= 0 || n_tokens < 0 || !states_given(st) || st.buffer_floats <= 0) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  const dim3 grid(unsigned(n_tokens), unsigned((C + detail::kDeltaThreads - 1) / detail::kDeltaThreads));
  detail::delta_conv_kernel<<<grid, detail::kDeltaThreads, 0, stream>>>(mixed, conv_w, K, C, st, out);
  return cudaGetLastError();
}

cudaError_t delta_prepare(float* conv, int C, int n_k_heads, int dk, float eps, float* decay, float* beta,
                          const float* a, const float* dt_bias, int n_v_heads, int n_tokens, cudaStream_t stream) {
  if (n_k_heads <= 0 || dk <= 0 || n_v_heads <= 0 || 2 * n_k_heads * dk > C || n_tokens < 0)
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  detail::delta_prepare_kernel<<<unsigned(n_tokens), detail::kDeltaThreads, 0, stream>>>(
      conv, C, n_k_heads, dk, eps, decay, beta, a, dt_bias, n_v_heads);
  return cudaGetLastError();
}

cudaError_t delta_rule(const float* conv, int C, int n_k_heads, int n_v_heads, int dk, int dv, const float* decay,
                       const float* beta, float scale, int n_seqs, const DeltaStates& st, int64_t conv_state_floats,
                       float* core, cudaStream_t stream) {
  if (n_k_heads <= 0 || n_v_heads <= 0 || n_v_heads % n_k_heads != 0 || dk <= 0 || dk > kMaxDeltaHeadDim || dv <= 0 ||
      2 * n_k_heads * dk + n_v_heads * dv > C || n_seqs < 0 || !states_given(st) || conv_state_floats < 0 ||
      n_v_heads > 65535)
    return cudaErrorInvalidValue;
  if (n_seqs == 0) return cudaSuccess;
  const dim3 grid(unsigned(n_seqs), unsigned(n_v_heads), unsigned((dv + detail::kRuleWarps - 1) / detail::kRuleWarps));
  detail::delta_rule_kernel<<<grid, detail::kRuleWarps * 32, 0, stream>>>(conv, C, n_k_heads, n_v_heads, dk, dv, decay,
                                                                          beta, scale, st, conv_state_floats, core);
  return cudaGetLastError();
}

cudaError_t split_query_gate(const float* qg, int n_tokens, int n_head, int hd, float* q, float* gate,
                             cudaStream_t stream) {
  if (n_tokens < 0 || n_head <= 0 || hd <= 0) return cudaErrorInvalidValue;
  const int64_t n = int64_t(n_tokens) * n_head * hd;
  if (n == 0) return cudaSuccess;
  detail::split_query_gate_kernel<<<elementwise_blocks(n), detail::kDeltaThreads, 0, stream>>>(qg, n, hd, q, gate);
  return cudaGetLastError();
}

cudaError_t sigmoid_gate(float* x, const float* gate, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  detail::sigmoid_gate_kernel<<<elementwise_blocks(n), detail::kDeltaThreads, 0, stream>>>(x, gate, n);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
