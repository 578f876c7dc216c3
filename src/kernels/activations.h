// The FFN activation, compiled with Highway for several targets and picked
// at run time (activations.cpp).
#pragma once

#include <cstddef>

namespace pagoda {

// gate[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]:
// Highway's vector exp (within a few ULP of std::exp), the same on every FMA
// target. The FFN's activation; as scalar std::exp it took ~3 ns an element.
void swiglu_simd(float* gate, const float* up, size_t n);

// gate[i] = gelu(gate[i]) * up[i], GELU's tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): Gemma's GeGLU, with
// Highway's vector tanh (a few ULP of std::tanh).
void geglu_tanh_simd(float* gate, const float* up, size_t n);

}  // namespace pagoda
