// The building blocks of the forward pass over a batch of T token rows:
// matmul against a stored weight matrix, RMSNorm, SwiGLU (RoPE: rope.h). matmul runs
// on the SIMD kernels of kernels/float_matmul.h and kernels/quant_dot.h, the rest are
// plain loops; every output element is computed the same way whatever the
// batch or thread split, so results do not depend on them.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <new>
#include <span>
#include <vector>

#include "model/weights.h"
#include "util/thread_pool.h"

namespace pagoda {

// Allocates on 64-byte boundaries, so the rows of activation and decoded
// weight buffers (multiples of 16 floats wide) start on cache lines and the
// kernels' 64-byte loads never straddle two (a third slower otherwise).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

// y[t][r] = dot(w.row(r), x[t]) for t < n_tokens; x is n_tokens x w.cols,
// y is n_tokens x w.rows. Each weight row is read once for all tokens.
void matmul(const Matrix& w, const float* x, int n_tokens, float* y, ThreadPool& pool);

// Several matrices on the same input (Q, K and V; gate and up): the same
// results as one matmul call each, but matrices packed into row panels whose
// types quantize the input alike (one type, or Q4_K_M's Q4_K and Q6_K) run as
// one parallel loop on the input quantized once (fewer wake-ups and waits
// per step).
struct MatmulOut {
  const Matrix& w;
  float* y;
};
void matmul(std::span<const MatmulOut> outs, const float* x, int n_tokens, ThreadPool& pool);
inline void matmul(std::initializer_list<MatmulOut> outs, const float* x, int n_tokens, ThreadPool& pool) {
  matmul(std::span<const MatmulOut>(outs.begin(), outs.size()), x, n_tokens, pool);
}

// Decodes row r of w (an embedding lookup).
void read_row(const Matrix& w, int r, float* out);

// out = x / sqrt(mean(x^2) + eps) * weight, over n elements (weight null: none, gemma4's V norm).
void rmsnorm(const float* x, const float* weight, int n, float eps, float* out);

// out = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, over n elements (LayerNorm).
void layernorm(const float* x, const float* weight, const float* bias, int n, float eps, float* out);

// x[i] = gelu(x[i]), GELU's tanh approximation: bert's ungated FFN.
void gelu_tanh(float* x, int n);

// gate[i] = silu(gate[i]) * up[i] (swiglu_simd, kernels/activations.h).
void swiglu(float* gate, const float* up, int n);
// gate[i] = gelu_tanh(gate[i]) * up[i] (geglu_tanh_simd).
void geglu_tanh(float* gate, const float* up, int n);
// gate[i] = act(gate[i], up[i]) for the model's gated activation (config.h).
void gated_activation(Activation act, float* gate, const float* up, int n);

}  // namespace pagoda
