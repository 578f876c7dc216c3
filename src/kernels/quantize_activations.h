// Activation quantization for the quantized matmul: rows of floats to the
// 8-bit format a weight type's dot kernel takes (quant/dot.h). Q8_K (the
// K-quants' activations) and Q8_0 (the legacy formats') have Highway SIMD
// encoders bit-identical to the scalar quantize_row (their reference).
#pragma once

#include <cstddef>

#include "gguf/types.h"

namespace pagoda {

// quantize_row(xt, x, out, n) for xt = Q8_0 or Q8_K, with the same bytes.
void quantize_activations(TensorType xt, const float* x, void* out, size_t n);

}  // namespace pagoda
