// SIMD kernels of the float matmul path (weights F32, F16, BF16 against F32
// activations), of attention and of the FFN activation: row decoding to F32
// (Q8_0 too, for embedding lookups), the dot product, and a
// register-blocked tile kernel, compiled with Highway for several targets
// and picked at run time.
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

// dequantize_row for F16, BF16 and Q8_0, vectorized; the same values bit for
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

// x = softmax(scale * x), in place: Highway's vector exp (within a few ULP
// of std::exp) and a fixed summation order, the same on every FMA target.
void softmax_scaled(float* x, size_t n, float scale);

// Decode attention over a paged KV cache: K or V rows of one KV head,
// position p at blocks[p / block_size] + (p % block_size) * ld elements
// (each block pointer already at the head's first element), F32 or F16.
struct PagedRows {
  TensorType type = TensorType::F32;
  const void* const* blocks = nullptr;
  size_t block_size = 0, ld = 0;
};
// Head sizes the attention kernels take: multiples of 16 up to 128 (every
// Llama-family model's 64 or 128); others take matmul_rows_fused and axpy_rows.
inline constexpr size_t kAttendMaxHeadDim = 128;
bool attend_kernels_take(size_t hd);
// scores[h * ld_s + p] = dot(q + h * hd, K row p) for h < n_q, p < n: bit for
// bit dot_f32 (F16 rows: dot_f16_f32). One call per KV head: a block of 16
// positions' K rows stays in L1 for every query head, and on AVX-512 the 16
// scores' partial sums are reduced together (the same additions).
void attend_scores(const float* q, size_t n_q, size_t hd, const PagedRows& k, size_t n, float* scores, size_t ld_s);
// out[h * hd + d] = the sum over p < n, in order from zero, of
// w[h * ld_w + p] * (V row p)[d]: bit for bit one axpy per row into a zeroed out.
void attend_values(const float* w, size_t ld_w, size_t n_q, const PagedRows& v, size_t n, float* out, size_t hd);

// gate[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]:
// Highway's vector exp (within a few ULP of std::exp), the same on every FMA
// target. The FFN's activation; as scalar std::exp it took ~3 ns an element.
void swiglu_simd(float* gate, const float* up, size_t n);

// The tile kernel: y[t * ldy + r] = dot(row r, x + t * ldx) for r < n_rows,
// t < n_tokens, with row r at w + r * row_stride bytes in its stored type t
// (simd_float_row_type), decoded in registers, `cols` values each. Blocks of
// several rows x several tokens share loads in registers; each result equals
// decoding the row (dequantize_row) and calling dot_f32.
void matmul_rows_fused(TensorType t, const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tokens, size_t cols, float* y, size_t ldy);

}  // namespace pagoda
