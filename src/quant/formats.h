// Per-format row encoders and decoders. n is the element count, a multiple of
// the format's block size (callers check; rows.h is the checked interface).
// The decoders are the scalar truth every kernel is tested against.
#pragma once

#include <cstddef>

#include "quant/blocks.h"

namespace pagoda {

// 32-element formats, with ggml's reference rounding.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n);

// K-quants. The Q2_K to Q6_K encoders search each sub-block's scale (and
// min) by alternating least squares: not llama.cpp's search, same format.
void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n);
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n);
void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n);
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n);
void dequantize_row_q8_k(const BlockQ8_K* x, float* y, size_t n);

// The non-linear IQ4_NL and IQ4_XS (iq4.cpp): a scale search of their own,
// indices into the format's fixed table.
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, size_t n);
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n);

// MXFP4 (mxfp4.cpp): ggml's power-of-two scale and nearest table value, so
// the same bytes as its reference quantizer.
void quantize_row_mxfp4(const float* x, BlockMXFP4* y, size_t n);
void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, size_t n);

}  // namespace pagoda
