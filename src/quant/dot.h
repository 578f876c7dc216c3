// Dot products of a quantized weight row with an activation row quantized to
// 8 bits, in integer arithmetic per block as the formats are designed for:
// the 32-element formats (Q4_0, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) take Q8_0
// activations, the 256-element ones (Q2_K to Q6_K, IQ4_XS) take Q8_K.
// The kernels here are the scalar ones: the reference the SIMD versions
// (kernels/quant_dot.h, vec_dot) are tested against, and the fallback where
// no SIMD version exists. Each sums its
// blocks in order, so a result depends only on the two rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"
#include "quant/blocks.h"

namespace pagoda {

// Whether t is one of the block-quantized weight types with a dot kernel;
// for exactly these, matmul takes the integer path (activations quantized to
// activation_type(t)), Q8_0 included, as llama.cpp does (why:
// docs/performance.md, appendix "Kernel tuning").
bool has_quantized_dot(TensorType t);

// The type activations are quantized to for dot products with weights of
// type t (Q8_0 or Q8_K); Unsupported unless has_quantized_dot(t).
TensorType activation_type(TensorType t);

// The scalar kernel for t (has_quantized_dot) over n elements: one of those
// below, chosen by type (the reference in tests and fallbacks).
float vec_dot_scalar(TensorType t, const void* w, const void* x, size_t n);

// The scalar kernels, over nb blocks.
float vec_dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, size_t nb);
float vec_dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, size_t nb);
float vec_dot_q5_0_q8_0(const BlockQ5_0* w, const BlockQ8_0* x, size_t nb);
float vec_dot_q4_k_q8_k(const BlockQ4_K* w, const BlockQ8_K* x, size_t nb);
float vec_dot_q6_k_q8_k(const BlockQ6_K* w, const BlockQ8_K* x, size_t nb);
float vec_dot_q5_1_q8_0(const BlockQ5_1* w, const BlockQ8_0* x, size_t nb);
float vec_dot_iq4_nl_q8_0(const BlockIQ4_NL* w, const BlockQ8_0* x, size_t nb);
float vec_dot_mxfp4_q8_0(const BlockMXFP4* w, const BlockQ8_0* x, size_t nb);
float vec_dot_q2_k_q8_k(const BlockQ2_K* w, const BlockQ8_K* x, size_t nb);
float vec_dot_q3_k_q8_k(const BlockQ3_K* w, const BlockQ8_K* x, size_t nb);
float vec_dot_q5_k_q8_k(const BlockQ5_K* w, const BlockQ8_K* x, size_t nb);
float vec_dot_iq4_xs_q8_k(const BlockIQ4_XS* w, const BlockQ8_K* x, size_t nb);

// Their exact integer part for one block: the sum the SIMD kernels compute.
// The formats with mins give two: Q4_K, Q5_K and Q2_K the scale-weighted
// sum and the min-weighted bsums, Q5_1 the codes' sum and the activations'.
int32_t block_dot_q8_0(const BlockQ8_0& w, const BlockQ8_0& x);
int32_t block_dot_q4_0(const BlockQ4_0& w, const BlockQ8_0& x);
int32_t block_dot_q5_0(const BlockQ5_0& w, const BlockQ8_0& x);
void block_dot_q4_k(const BlockQ4_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins);
int32_t block_dot_q6_k(const BlockQ6_K& w, const BlockQ8_K& x);
void block_dot_q5_1(const BlockQ5_1& w, const BlockQ8_0& x, int32_t& codes, int32_t& x_sum);
int32_t block_dot_iq4_nl(const BlockIQ4_NL& w, const BlockQ8_0& x);
int32_t block_dot_mxfp4(const BlockMXFP4& w, const BlockQ8_0& x);
void block_dot_q2_k(const BlockQ2_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins);
int32_t block_dot_q3_k(const BlockQ3_K& w, const BlockQ8_K& x);
void block_dot_q5_k(const BlockQ5_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins);
int32_t block_dot_iq4_xs(const BlockIQ4_XS& w, const BlockQ8_K& x);

}  // namespace pagoda
