// Internal to the quantized dot kernels (kernels/quant_dot.h is the
// interface): the formats whose Highway kernels decode each block to bytes
// first, compiled in their own TU (quant_dot_decoded.cpp), and the scalar
// token-group fallback both TUs share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"
#include "kernels/quant_dot.h"

namespace pagoda {

// Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q5_K, IQ4_XS: each block is decoded once into
// its codes as bytes and its sub-block scales (quant_dot_decoded-inl.h).
bool is_decoded_dot_type(TensorType t);

// One weight row of t against n_x (1..kDotTokensMax) activation rows over
// nb blocks (at most dot_tables::kChunkBlocks): acc[k] += the blocks' terms,
// as OneRowManyTokens* of quant_dot.cpp (xd: the activations' block scales).
void decoded_row_dots(TensorType t, const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb,
                      const float* xd, float* acc);

// token_group_dot for those types (arguments checked by the caller).
void decoded_token_group_dot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out);

// token_group_dot by the scalar kernels, token by token: the fallback where
// the SIMD target lacks AVX-512 VNNI.
void token_group_dot_scalar(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out);

}  // namespace pagoda
