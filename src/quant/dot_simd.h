// The fast quantized dot products: one weight row against up to
// kDotRowsMax activation rows at once (a weight block is decoded once and
// reused for every activation row), with Highway SIMD kernels chosen at run
// time for the CPU (AVX2, AVX-512, AVX-512 VNNI, portable fallback).
//
// Every result is bit-identical to the scalar kernel of quant/dot.h for the
// same two rows: the SIMD code computes only the exact integer sum of each
// block, and the float scales are applied block by block in the reference's
// order. So results never depend on the SIMD target, batch or thread split.
#pragma once

#include <cstddef>

#include "gguf/types.h"

namespace pagoda {

inline constexpr int kDotRowsMax = 4;

// out[k] = vec_dot(t, w, x + k * x_stride, n) for k < n_x (1..kDotRowsMax):
// weight row w (n elements stored as t, has_quantized_dot(t)) against n_x
// activation rows stored as activation_type(t), x_stride bytes apart. Q8_K
// rows must come from quantize_row (their bsums are used, as the scalar
// Q4_K kernel does).
void vec_dot_rows(TensorType t, const void* w, const void* x, size_t x_stride, int n_x, size_t n, float* out);

// The name of the SIMD target the kernels run on (for benchmarks and logs).
const char* dot_simd_target();

}  // namespace pagoda
