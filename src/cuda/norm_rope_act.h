// The element-wise and per-row steps of a layer: RMS norm, rotary position
// embedding, SwiGLU (plain or gpt-oss's clamped one) or GeGLU, scales and soft-caps and the residual add. F32
// throughout.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda {

// out[t][i] = x[t][i] / sqrt(mean_j(x[t][j]^2) + eps) * w[i].
//   x    [n_tokens][n] F32
//   w    [n] F32, or null: none (gemma4's V norm)
//   out  [n_tokens][n] F32 (may be x itself)
cudaError_t rms_norm(const float* x, const float* w, float* out, int n_tokens, int n, float eps, cudaStream_t stream);

enum class RopeStyle {
  kNormal,  // pairs (x[2i], x[2i+1]): llama
  kNeox,    // pairs (x[i], x[i + n_rot/2]): qwen2
};

// As model/rope.h's Rope: pair i (i < n_rot/2) of every head turns by
// pos * freq_base^(-2i / n_rot) / freq_factors[i] / linear_factor, times
// YaRN's ramp where yarn_factor is set, and the turned values are multiplied
// by mscale. Dims n_rot..head_dim-1 are left alone.
struct RopeParams {
  int n_rot = 0;  // rotated dims, even, <= head_dim
  float freq_base = 10000.0f;
  RopeStyle style = RopeStyle::kNormal;
  const float* freq_factors = nullptr;  // device [n_rot/2] (Llama 3.1's rope_freqs.weight), or nullptr
  float linear_factor = 1.0f;           // linear scaling's factor (Gemma 3's global layers); 1: none
  float mscale = 1.0f;                  // Rope::mscale: YaRN's magnitude times attn_factor; 1 for most models
  float yarn_factor = 0.0f;             // YaRN's rope.scaling.factor (gpt-oss, Qwen3 at 128k); 0: none
  double yarn_low = 0, yarn_high = 0;   // and its ramp (Rope::yarn_ramp)
};

// In place.
//   x          [n_tokens][n_heads][head_dim] F32
//   positions  [n_tokens] int32 (>= 0)
cudaError_t rope(float* x, const int32_t* positions, int n_tokens, int n_heads, int head_dim, const RopeParams& p,
                 cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i].
//   gate, up, out  [n] F32 (out may be gate or up)
cudaError_t swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

// out[i] = gelu_tanh(gate[i]) * up[i], GELU's tanh approximation
// 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))): Gemma's GeGLU, as the CPU's
// geglu_tanh_simd (kernels/activations.h) computes it.
//   gate, up, out  [n] F32 (out may be gate or up)
cudaError_t geglu_tanh(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

// out[i] = g / (1 + exp(-1.702 g)) * (u + 1), g = min(gate[i], 7), u = up[i]
// clamped to [-7, 7]: gpt-oss's clamped SwiGLU, as the CPU's gated_activation.
//   gate, up, out  [n] F32 (out may be gate or up)
cudaError_t swiglu_oai(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

// x[t][i] *= 1 + temperature * log(floor(positions[t] / floor) + 1): the
// query's temperature by position (Ministral 3, Llama 4), as the CPU's.
//   x  [n_tokens][n] F32
cudaError_t query_temperature(float* x, const int32_t* positions, int n_tokens, int n, float temperature, int floor,
                              cudaStream_t stream);

// x[i] = (x[i] + y[i] * a) * b: gemma4's per-layer inputs, the projection's
// and the token table's parts summed (a sqrt(P), b 1/sqrt(2)).
cudaError_t blend(float* x, const float* y, float a, float b, int64_t n, cudaStream_t stream);

// g[t][i] = gelu_tanh(g[t][i]) * in[t * in_stride + i] (the CPU's gelu_tanh:
// 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))): gemma4's per-layer
// input gate, over layer l's slice of each token's inputs (in = pl + l P).
//   g  [n_tokens][n] F32
cudaError_t gelu_times(float* g, const float* in, int n_tokens, int n, int64_t in_stride, cudaStream_t stream);

// x[i] *= s (Gemma's embedding scale).
//   x  [n] F32
cudaError_t scale(float* x, float s, int64_t n, cudaStream_t stream);

// x[i] = cap * tanh(x[i] * s / cap), or x[i] * s where cap is 0: the logits'
// scale (granite) and soft-cap (gemma2), as the CPU's Model::forward.
//   x  [n] F32
cudaError_t scale_softcap(float* x, float s, float cap, int64_t n, cudaStream_t stream);

// y[i] += x[i] (the residual add).
//   y, x  [n] F32
cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t stream);

}  // namespace pagoda::cuda
