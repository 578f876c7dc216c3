// Row conversions between F32 and the weight types Pagoda reads (F32, F16,
// BF16, Q8_0), and the plain dot products the matmul kernels build on.
// These are the slow, obviously correct references too: optimized kernels are
// tested against them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/types.h"

namespace pagoda {

// Block of the Q8_0 format: 32 int8 values sharing one F16 scale.
struct BlockQ8_0 {
  static constexpr int kElems = 32;
  uint16_t d;  // F16 scale
  int8_t qs[kElems];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Whether matmul and embedding lookup accept this type.
bool weight_type_supported(TensorType t);

// Bytes of one row of n elements (n a multiple of the type's block size).
size_t row_bytes(TensorType t, size_t n);

// Decodes n elements (a multiple of the block size) of a row stored as t.
void dequantize_row(TensorType t, const void* src, float* dst, size_t n);

// Encodes n floats as t (F32, F16, BF16, Q8_0); rounding as llama.cpp does.
void quantize_row(TensorType t, const float* src, void* dst, size_t n);
std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n);

float dot_f32(const float* a, const float* b, size_t n);

}  // namespace pagoda
