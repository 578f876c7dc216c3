// The fast quantized dot products: tiles of up to kDotRowsMax weight rows
// by kDotTokensMax activation rows (each weight block is decoded once for all
// the activation rows), with Highway SIMD kernels chosen at run
// time for the CPU (AVX2, AVX-512, AVX-512 VNNI, portable fallback).
//
// Every result is bit-identical to the scalar kernel of quant/dot.h for the
// same two rows: the SIMD code computes only the exact integer sum of each
// block, and the float scales are applied block by block in the reference's
// order. So results never depend on the SIMD target, batch or thread split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/types.h"

namespace pagoda {

// dot(weight row w of n elements stored as t, activation row x stored as
// activation_type(t)) on the SIMD kernels. n must be a multiple of t's block size.
float vec_dot(TensorType t, const void* w, const void* x, size_t n);

inline constexpr int kDotRowsMax = 4;    // weight rows per tile
inline constexpr int kDotTokensMax = 8;  // activation rows per tile

// A tile of dot products: out[k * out_stride + r] = vec_dot(t, w_r, x_k, n)
// for weight rows w_r = w + r * w_stride (r < n_w) and activation rows
// x_k = x + k * x_stride (k < n_x), n_w in 1..kDotRowsMax and n_x in
// 1..kDotTokensMax. Weights are stored as t (has_quantized_dot(t)),
// activations as activation_type(t), n elements each. Q8_K rows must come from quantize_row (their bsums are
// used, as the scalar Q4_K kernel does).
void vec_dot_tile(TensorType t, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride, int n_x,
                  size_t n, float* out, size_t out_stride);

// Many tokens against Q4_0, Q5_0, Q8_0, Q4_K or Q6_K weights, the tokens as
// vector lanes: their 8-bit activations (Q8_0 or Q8_K) are transposed once per
// matmul into a TokenGroup (block, 4-code quad, token), then a weight row's
// blocks are decoded once and multiplied with every token's quad by vpdpbusd,
// with no horizontal sums. Each result equals vec_dot's (the scalar kernel's)
// bit for bit: the same exact integer sums, the same float expression in
// block order.
inline constexpr int kGroupTokens = 16;
struct TokenGroup {
  TensorType type = TensorType::Q8_0;  // of the activations: Q8_0 or Q8_K
  int n_tokens = 0;
  size_t nb = 0;              // blocks per row
  std::vector<int8_t> codes;  // [block][quad][token][4]: the activations' codes
  std::vector<int32_t> sums;  // [block][part][token]: sums of 32 codes (Q8_0) or 16 (Q8_K)
  std::vector<float> scales;  // [block][token]: the block's scale (0 past n_tokens)
};

// Fills g from n_tokens (1..kGroupTokens) activation rows of type xt (Q8_0 or
// Q8_K, as quantize_row writes them) and nb blocks, row k at x + k * x_stride.
void prepare_token_group(TensorType xt, const void* x, size_t x_stride, int n_tokens, size_t nb, TokenGroup& g);

// out[r * kGroupTokens + k] = vec_dot(t, w_r, x_k, n) for weight rows
// w_r = w + r * w_stride (r < n_rows, 1..kDotRowsMax) and the group's tokens k
// (g's activations of type activation_type(t)); out holds kDotRowsMax *
// kGroupTokens floats. Runs on every CPU; fast with AVX-512 VNNI, which
// prefers_token_groups tells.
void token_group_dot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out);
bool prefers_token_groups(TensorType t);

// The activation rows per tile the kernels run fastest with on this CPU:
// kDotTokensMax where the SIMD target has 32 vector registers (AVX-512: a
// decoded weight block serves twice the tokens), 4 elsewhere (16 registers).
int vec_dot_tile_tokens();

// Whether the AVX-512 targets run Q4_K in 512-bit vectors (by default on AMD
// CPUs; the results are the same either way). Tests and benchmarks switch it
// to run both kernels; not thread-safe against running kernels.
bool q4k_wide_vectors();
void set_q4k_wide_vectors(bool on);

// The name of the SIMD target the kernels run on (for benchmarks and logs).
const char* dot_simd_target();
// Whether that target has AVX-512 VNNI (Highway's AVX3_DL or a better x86
// target; tests may switch targets, see tests/kernels/simd_targets.h). Cheap:
// one dispatch-table lookup.
bool simd_target_is_avx512_vnni();
// Whether that target is x86 AVX2 or wider (AVX-512 included).
bool simd_target_is_x86_avx2();

}  // namespace pagoda
