// SIMD kernels of decode attention over a paged KV cache (scores, values)
// and its softmax, compiled with Highway for several targets and picked at
// run time (attention.cpp). Results keep the bits of the float kernels they
// stand for (float_matmul.h: one dot_f32 per score, one axpy per row), with
// the summation shape stated there.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cmath>

#include "gguf/types.h"
#include "kernels/float_matmul.h"

namespace pagoda {

// x = softmax(scale * x), in place: Highway's vector exp (within a few ULP
// of std::exp) and a fixed summation order, the same on every FMA target.
// A finite `sink` is a logit (not scaled) that joins only the denominator:
// gpt-oss's attention sinks, a share of the weight given to no position.
void softmax_scaled(float* x, size_t n, float scale, float sink = -INFINITY);

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

}  // namespace pagoda
