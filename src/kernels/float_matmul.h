// SIMD kernels of the float matmul path (weights F32, F16, BF16 against F32
// activations): row decoding to F32 (Q8_0 too, for embedding lookups), the
// dot product, axpy, and a register-blocked tile kernel, compiled with
// Highway for several targets and picked at run time (float_matmul.cpp).
// Attention and softmax: attention.h; the FFN activation: activations.h.
//
// Summation shape, the same in every kernel and in the scalar references: a
// dot of n elements keeps 16 partial sums, lane j accumulating
// fma(a[i], b[i], lane) for i = j, j + 16, ... in order (a tail shorter than
// 16 is padded with zeros), then adds them as a fixed tree:
// (j, j+8), then (j, j+4), (j, j+2), (j, j+1). So each output depends only on
// its two rows, never on which other outputs a kernel computed alongside it
// (batch composition, thread split, tile edges), and every FMA target (AVX2,
// AVX-512) gives the same bits. The portable fallback may round differently.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"

namespace pagoda {

// Partial sums of every dot product (see above).
inline constexpr size_t kDotLanes = 16;

// Whether the tile kernel decodes rows of type t itself (F32, F16, BF16):
// the weight types of the float matmul path.
bool simd_float_row_type(TensorType t);

// dequantize_row for F16, BF16, Q8_0 and MXFP4, vectorized; the same values bit for
// bit. Other types go to dequantize_row.
void dequantize_row_simd(TensorType t, const void* src, float* dst, size_t n);

// The float dot product: SIMD, with the fixed summation shape above.
float dot_f32(const float* a, const float* b, size_t n);

// The reference summation in plain scalar code (std::fma).
float dot_f32_scalar(const float* a, const float* b, size_t n);

// dot(a, b) with F16 a (IEEE half bits), F32 b; same summation.
float dot_f16_f32(const uint16_t* a, const float* b, size_t n);
float dot_f16_f32_scalar(const uint16_t* a, const float* b, size_t n);

// y[i] += a * x[i] (one fma per element), x F32 or F16.
void axpy_f32(float a, const float* x, float* y, size_t n);
void axpy_f16(float a, const uint16_t* x, float* y, size_t n);
// The same for n_rows rows x + r * ldx in order (ldx in elements), y kept in
// registers: equal to one axpy call per row.
void axpy_rows_f32(const float* a, const float* x, size_t ldx, size_t n_rows, float* y, size_t n);
void axpy_rows_f16(const float* a, const uint16_t* x, size_t ldx, size_t n_rows, float* y, size_t n);

// The tile kernel: y[t * ldy + r] = dot(row r, x + t * ldx) for r < n_rows,
// t < n_tokens, with row r at w + r * row_stride bytes in its stored type t
// (simd_float_row_type), decoded in registers, `cols` values each. Blocks of
// several rows x several tokens share loads in registers; each result equals
// decoding the row (dequantize_row) and calling dot_f32.
void matmul_rows_fused(TensorType t, const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tokens, size_t cols, float* y, size_t ldy);

}  // namespace pagoda
