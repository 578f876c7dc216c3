// The FFN activation, compiled with Highway for several targets and picked
// at run time (activations.cpp).
#pragma once

#include <cstddef>

namespace pagoda {

// gate[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]:
// Highway's vector exp (within a few ULP of std::exp), the same on every FMA
// target. The FFN's activation; as scalar std::exp it took ~3 ns an element.
void swiglu_simd(float* gate, const float* up, size_t n);

}  // namespace pagoda
