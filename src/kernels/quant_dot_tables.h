// Tables and buffers shared by every target's quantized dot kernels
// (kernels/quant_dot.cpp), compiled once: shuffle indices for the K-quant
// sub-block scales and the chunk of integer sums between a kernel's halves.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/quant_dot.h"
#include "quant/blocks.h"

#ifndef PAGODA_QUANT_DOT_SIMD_TABLES
#define PAGODA_QUANT_DOT_SIMD_TABLES
namespace pagoda::dot_tables {

// Byte-shuffle indices that spread 16-bit sub-block scales (8 of them, in a
// 128-bit block) over the 16-bit lanes of pair products: entry q is the byte
// of the scale for stream byte q, where stream byte q belongs to the pair
// product of elements q & ~1 and q | 1 of the super-block.
constexpr std::array<uint8_t, kQKK> make_scale_index(int sub_block, int period) {
  std::array<uint8_t, kQKK> t{};
  for (int q = 0; q < kQKK; ++q) t[q] = uint8_t(2 * ((q % period) / sub_block) + (q & 1));
  return t;
}
// Q4_K: 8 sub-blocks of 32. Q6_K: 16 sub-blocks of 16, 8 per 128 elements.
alignas(64) inline constexpr auto kQ4KScaleIndex = make_scale_index(32, kQKK);
alignas(64) inline constexpr auto kQ6KScaleIndex = make_scale_index(16, kQKK / 2);
// Q4_K mins against the 16 bsums: bsum g pairs with min g / 2.
alignas(64) inline constexpr auto kQ4KMinIndex = make_scale_index(4, kQKK);

// A chunk of blocks' integer sums (per activation row) and weight scales as
// floats, between the integer and the float half of a kernel.
inline constexpr size_t kChunkBlocks = 64;
inline constexpr size_t kPad = 16;  // room for whole vectors past the last block
// A block's sums are stored at sums[b * slots + i], with `slots` the number
// of its sums (n_x, or 2 n_x for Q4_K: scaled then mins) rounded up to a power
// of two, so the SIMD code can reduce several blocks' vectors together.
constexpr size_t sum_slots(int sums) { return sums <= 1 ? 1 : sums <= 2 ? 2 : sums <= 4 ? 4 : sums <= 8 ? 8 : 16; }
// The activation scales the float halves take: xd[kXdStride * b + k] is
// activation row k's scale of block b.
inline constexpr size_t kXdStride = kDotTokensMax;
struct ChunkSums {
  int32_t sums[kChunkBlocks * sum_slots(2 * kDotTokensMax) + kPad];
  alignas(64) float w_d[kChunkBlocks + kPad];
  alignas(64) float w_dmin[kChunkBlocks + kPad];  // Q4_K
};

// Q4KBlockWide: the scale pair of each 32-bit lane of its four 64-element
// vectors (sub-blocks 2v and 2v + 1, one per half).
constexpr std::array<std::array<int32_t, 16>, 4> make_wide_scale_index() {
  std::array<std::array<int32_t, 16>, 4> t{};
  for (int v = 0; v < 4; ++v)
    for (int lane = 0; lane < 16; ++lane) t[v][lane] = 2 * v + lane / 8;
  return t;
}
alignas(64) inline constexpr auto kQ4KWideScaleIndex = make_wide_scale_index();

// Whether the AVX-512 targets multiply Q4_K blocks in 512-bit vectors (see
// Q4KBlockWide): by default on AMD CPUs, whose 512-bit units multiply as many
// vectors per cycle as their 256-bit ones; Intel's issue 512-bit multiplies on
// fewer ports and the shuffles the layout needs compete with the reductions.
inline bool q4k_wide = __builtin_cpu_is("amd");

}  // namespace pagoda::dot_tables
#endif
