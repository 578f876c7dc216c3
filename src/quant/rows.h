// Row conversions between F32 and the weight types Pagoda reads (F32, F16,
// BF16, Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS; Q8_K for activations). They are the
// slow, obviously correct references too: optimized kernels are tested
// against them. Block layouts: quant/blocks.h; quantized dots: quant/dot.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/types.h"
#include "quant/blocks.h"

namespace pagoda {

// Whether matmul and embedding lookup accept this type.
bool weight_type_supported(TensorType t);

// The names of the types weight_type_supported accepts, comma-separated (for
// messages that refuse a file).
std::string supported_weight_types();

// Elements per block of t (1 for the float types).
size_t block_elems(TensorType t);

// Bytes of one row of n elements; InvalidArgument unless n is a multiple of
// the type's block size.
size_t row_bytes(TensorType t, size_t n);

// Decodes n elements (a multiple of the block size) of a row stored as t.
void dequantize_row(TensorType t, const void* src, float* dst, size_t n);

// Encodes n floats as t. F16/BF16/Q8_0/Q4_0/Q5_0/Q5_1/MXFP4 round as
// llama.cpp does; the K-quants and IQ4 formats search scales their own way (valid
// blocks, similar error).
void quantize_row(TensorType t, const float* src, void* dst, size_t n);
std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n);

}  // namespace pagoda
