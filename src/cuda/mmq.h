// Quantized matrix times a batch of activations on int8 tensor cores ("MMQ",
// issue 40): for batches past matvec's (decode with many sequences, small
// prefills), reading the weights once in their GGUF blocks instead of an F16
// copy. The activations are quantized to 8 bits first (what the CPU's integer
// dot products take), so the result is the CPU's vec_dot_scalar (quant/dot.h)
// of the same operands, to the bit, given the same quantized activations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/moe.h"
#include "gguf/types.h"

namespace pagoda::cuda {

// Whether mmq takes weights of type t (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, Q3_K,
// Q4_K, Q5_K, IQ4_XS, Q6_K: every format whose block dot the CPU takes in
// integers against one 8-bit code per element; not Q5_1, Q2_K, F16, ...).
bool mmq_supports(TensorType t);

// The elements one activation scale covers for weights of type t: 32 (the
// CPU's Q8_0), 256 (its Q8_K), or 0 where mmq does not take t. Matrices of
// types with the same one read one quantization of x.
int mmq_activation_block(TensorType t);

// The scratch mmq needs for n_tokens activations of length k: per token, k
// int8 codes, then a F32 scale and an int32 sum per 32 elements (1.25 k bytes).
size_t mmq_scratch_bytes(int n_tokens, int64_t k);

// x [n_tokens][k] F32 quantized into `scratch` for weights of type t: per 32
// elements, int8 codes, an F32 scale and the codes' sum. The scale is the
// CPU's activation_type(t) one (quant/dot.h): per 32 elements rounded to F16
// (Q8_0) for Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4, per 256 in F32 (Q8_K) for
// the K-quants and IQ4_XS, and the codes
// are those of quantize_row_q8_0 / quantize_row_q8_k. One quantization serves
// every matmul of x by weights of types with the same activation type.
// cudaErrorInvalidValue unless mmq_supports(t), k is a positive multiple of
// t's block size, n_tokens >= 1, and scratch (4-byte aligned) holds
// mmq_scratch_bytes(n_tokens, k).
cudaError_t mmq_quantize(TensorType t, const float* x, int n_tokens, int64_t k, void* scratch, size_t scratch_bytes,
                         cudaStream_t stream);

// out[t][r] = sum over blocks of (w[r]'s codes . x[t]'s codes) x the scales,
// x as mmq_quantize(t, ...) left it in `scratch`.
//   w    [n_rows][k] of type t (GGUF blocks)
//   out  [n_tokens][n_rows] F32
// cudaErrorInvalidValue as mmq_quantize, or for n_rows < 0.
cudaError_t mmq_quantized(TensorType t, const void* w, int64_t n_rows, int64_t k, const void* scratch,
                          size_t scratch_bytes, int n_tokens, float* out, cudaStream_t stream);

// Both: x quantized into scratch, then the product. No sync, no allocation.
cudaError_t mmq(TensorType t, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                void* scratch, size_t scratch_bytes, cudaStream_t stream);

// For 1 to kMaxMatvecTokens tokens (decode): x as mmq_quantize(t, ...) left it
// in `scratch` (16-byte aligned), each row's blocks dotted with every token's
// codes by dp4a on the CUDA cores, a warp a row (llama.cpp's mmvq): matvec's
// product, reading 8-bit activations instead of F32 ones. The CPU's integer
// terms, summed across blocks in another order (so within float rounding of
// vec_dot_scalar, not to the bit).
//   w    [n_rows][k] of type t;  out  [n_tokens][n_rows] F32
// cudaErrorInvalidValue as mmq_quantized, or past kMaxMatvecTokens tokens.
cudaError_t mmvq_quantized(TensorType t, const void* w, int64_t n_rows, int64_t k, const void* scratch,
                           size_t scratch_bytes, int n_tokens, float* out, cudaStream_t stream);
// Both: x quantized into scratch, then mmvq_quantized.
cudaError_t mmvq(TensorType t, const void* w, int64_t n_rows, int64_t k, const float* x, int n_tokens, float* out,
                 void* scratch, size_t scratch_bytes, cudaStream_t stream);

// A mixture of experts' matrices over their slots (moe.h) for decode, as
// matvec_experts' tiles of up to kExpertTileSlots slots of one expert, with
// mmvq's products: slot s reads row s / x_per_slot of the activations that
// mmq_quantize(w.type, x, n_x_rows, w.cols, ...) left in `scratch` (16-byte
// aligned) and writes row s of out [n_slots][w.rows].
// cudaErrorInvalidValue as mmvq_quantized, or for bad tiles' bounds.
cudaError_t mmvq_experts(const ExpertStack& w, const void* scratch, size_t scratch_bytes, int n_x_rows, int x_per_slot,
                         const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out, cudaStream_t stream);

// A mixture of experts' matrices over their slots (moe.h), for batches past
// matvec's: each tile of up to kMmqExpertSlots slots of one expert (moe_group's
// tiles of that size) against that expert's rows; slot s reads row
// s / x_per_slot of the activations, which mmq_quantize(w.type, x, n_x_rows,
// w.cols, ...) left in `scratch`, and writes row s of out [n_slots][w.rows].
// cudaErrorInvalidValue as mmq_quantized, or for bad tiles' bounds.
inline constexpr int kMmqExpertSlots = 32;
cudaError_t mmq_experts(const ExpertStack& w, const void* scratch, size_t scratch_bytes, int n_x_rows, int x_per_slot,
                        const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out, cudaStream_t stream);

}  // namespace pagoda::cuda
