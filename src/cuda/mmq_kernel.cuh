// mmq's kernels (launchers: mmq.cu), apart so a test can also run them on the
// CPU (tests/cuda/host_emulation.h): the activations quantized to 8 bits, then
// weight-rows x tokens tiles on int8 tensor cores (cuda/mma.cuh), the weights
// read in their GGUF blocks and decoded to int8 codes in shared memory.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/decoders.cuh"
#include "cuda/device_common.cuh"
#include "cuda/matvec.h"
#include "cuda/mma.cuh"
#include "cuda/moe.h"
#include "cuda/portable.cuh"
#include "gguf/types.h"
#include "quant/blocks.h"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

// ------------------------------------------------------------ activations
// x [n_tokens][k] F32 becomes, per 32 elements, 32 int8 codes (packed 4 to a
// word, element 4w + i in byte i of word w), an F32 scale and the codes' sum:
//   codes  [n_tokens][k / 4] uint32
//   scales [n_tokens][k / 32] F32
//   sums   [n_tokens][k / 32] int32 (Q4_K's min term needs them)
// The scale is shared by a group of 32 elements (the CPU's Q8_0, for the
// formats of 32-element blocks) or 256 (its Q8_K, for the super-block ones:
// mmq_super_blocks), rounded as src/quant does:
// Q8_0 (quantize_row_q8_0): d = amax / 127 stored as F16, codes lround(x / d)
// (half away from zero) with 1 / d from the unrounded d; Q8_K
// (quantize_row_q8_k): d = amax / 127 kept in F32, codes rounded half to even
// and clamped to [-127, 127]. So the codes and scales equal the CPU's.
constexpr int kQuantizeThreads = 128;

// Where the three arrays start in a scratch buffer (word offsets past `codes`).
PAGODA_HD int64_t q8_scales_offset(int n_tokens, int64_t k) { return int64_t(n_tokens) * k / 4; }
PAGODA_HD int64_t q8_sums_offset(int n_tokens, int64_t k) {
  return int64_t(n_tokens) * k / 4 + int64_t(n_tokens) * k / 32;
}

// One thread per group of `group` elements of a token (32 or 256): its amax,
// then its 32-element blocks' codes, scales and sums.
__global__ void __launch_bounds__(kQuantizeThreads)
    quantize_q8_kernel(const float* x, int n_tokens, int64_t k, int group, uint32_t* codes, float* scales, int* sums) {
  const int64_t g = int64_t(blockIdx.x) * kQuantizeThreads + threadIdx.x;
  if (g >= int64_t(n_tokens) * (k / group)) return;
  const float* xg = x + g * group;  // groups tile each row, and rows are contiguous
  float amax = 0.0f;
  for (int i = 0; i < group; ++i) amax = fmaxf(amax, fabsf(xg[i]));
  const float d = amax / 127.0f;
  const bool k_quant = group == kQKK;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;  // d >= 0: the CPU's `!= 0` and `> 0` agree (NaN aside)
  const float stored = k_quant ? d : __half2float(__float2half_rn(d));
  for (int b = 0; b < group / 32; ++b) {
    int sum = 0;
    for (int w = 0; w < 8; ++w) {
      uint32_t word = 0;
      for (int i = 0; i < 4; ++i) {
        const float v = xg[32 * b + 4 * w + i] * id;
        const int q = k_quant ? min(127, max(-127, int(rintf(v)))) : int(lroundf(v));
        sum += q;
        word |= uint32_t(uint8_t(int8_t(q))) << (8 * i);
      }
      codes[g * group / 4 + 8 * b + w] = word;
    }
    scales[g * group / 32 + b] = stored;
    sums[g * group / 32 + b] = sum;
  }
}

// ------------------------------------------------------------ weights
// Per format: the codes of a 32-element block (piece c of a row; a K-quant
// super-block holds 8), 4 at a time, as the integers the CPU's block dots
// multiply (src/quant/dot.cpp), and the block's scales:
//   kind Plain: out += (d * x_scale) * dot, per block (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4)
//   kind MinK:  per super-block, x_scale * (d * sum_j s0_j dot_j - dmin * sum_j s1_j xsum_j) (Q4_K, Q5_K)
//   kind Scaled: per super-block, (x_scale * d) * sum_j s0_j dot_j (IQ4_XS)
//   kind Half16: per super-block, (x_scale * d) * sum_j (s0_j dot_lo_j + s1_j dot_hi_j),
//                dot_lo and dot_hi over elements 0-15 and 16-31 (Q6_K, Q3_K)
// The kinds past Plain take the CPU's Q8_K activations (a scale per 256).
enum class MmqKind { Plain, MinK, Scaled, Half16 };

// Whether x for weights of type t is quantized per 256 elements (Q8_K) rather than per 32 (Q8_0).
PAGODA_HD constexpr bool mmq_super_blocks(TensorType t) {
  return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K || t == TensorType::IQ4_XS ||
         t == TensorType::Q3_K;
}

// Trivial (no member initializers), as a __shared__ array's type must be; zeroed with MmqMeta{}.
struct MmqMeta {
  float d, dmin;
  int s0, s1;
};

PAGODA_HD uint32_t pack4(int c0, int c1, int c2, int c3) {
  return uint32_t(uint8_t(int8_t(c0))) | uint32_t(uint8_t(int8_t(c1))) << 8 | uint32_t(uint8_t(int8_t(c2))) << 16 |
         uint32_t(uint8_t(int8_t(c3))) << 24;
}

template <TensorType T>
struct MmqFormat;

template <>
struct MmqFormat<TensorType::Q8_0> {
  static constexpr TensorType kType = TensorType::Q8_0;
  static constexpr MmqKind kKind = MmqKind::Plain;
  static constexpr int kBlockElems = kQK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const int8_t* q = reinterpret_cast<const BlockQ8_0*>(row)[c].qs + 4 * w;
    return pack4(q[0], q[1], q[2], q[3]);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    m.d = half_bits(reinterpret_cast<const BlockQ8_0*>(row)[c].d);
  }
};

template <>
struct MmqFormat<TensorType::Q4_0> {
  static constexpr TensorType kType = TensorType::Q4_0;
  static constexpr MmqKind kKind = MmqKind::Plain;
  static constexpr int kBlockElems = kQK;
  // Elements 0-15 are the low nibbles of qs[0..15], 16-31 the high ones; less 8.
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const uint8_t* q = reinterpret_cast<const BlockQ4_0*>(row)[c].qs + 4 * (w % 4);
    const int shift = w < 4 ? 0 : 4;
    return pack4(((q[0] >> shift) & 0xF) - 8, ((q[1] >> shift) & 0xF) - 8, ((q[2] >> shift) & 0xF) - 8,
                 ((q[3] >> shift) & 0xF) - 8);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    m.d = half_bits(reinterpret_cast<const BlockQ4_0*>(row)[c].d);
  }
};

// Q5_0: Q4_0's nibbles with a fifth bit (q5_code), less 16.
template <>
struct MmqFormat<TensorType::Q5_0> {
  static constexpr TensorType kType = TensorType::Q5_0;
  static constexpr MmqKind kKind = MmqKind::Plain;
  static constexpr int kBlockElems = kQK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[c];
    return pack4(q5_code(b.qs, b.qh, 4 * w) - 16, q5_code(b.qs, b.qh, 4 * w + 1) - 16,
                 q5_code(b.qs, b.qh, 4 * w + 2) - 16, q5_code(b.qs, b.qh, 4 * w + 3) - 16);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    m.d = half_bits(reinterpret_cast<const BlockQ5_0*>(row)[c].d);
  }
};

// IQ4_NL and MXFP4: Q4_0's nibbles, each standing for a value of a table
// (iq4_value, mxfp4_value: MXFP4's doubled, its scale halved).
template <class Block, bool kMxfp4>
struct MmqTableCodes {
  PAGODA_HD static int value(int nibble) { return kMxfp4 ? mxfp4_value(nibble) : iq4_value(nibble); }
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const uint8_t* q = reinterpret_cast<const Block*>(row)[c].qs + 4 * (w % 4);
    const int shift = w < 4 ? 0 : 4;
    return pack4(value((q[0] >> shift) & 0xF), value((q[1] >> shift) & 0xF), value((q[2] >> shift) & 0xF),
                 value((q[3] >> shift) & 0xF));
  }
};

template <>
struct MmqFormat<TensorType::IQ4_NL> : MmqTableCodes<BlockIQ4_NL, false> {
  static constexpr TensorType kType = TensorType::IQ4_NL;
  static constexpr MmqKind kKind = MmqKind::Plain;
  static constexpr int kBlockElems = kQK;
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    m.d = half_bits(reinterpret_cast<const BlockIQ4_NL*>(row)[c].d);
  }
};

template <>
struct MmqFormat<TensorType::MXFP4> : MmqTableCodes<BlockMXFP4, true> {
  static constexpr TensorType kType = TensorType::MXFP4;
  static constexpr MmqKind kKind = MmqKind::Plain;
  static constexpr int kBlockElems = kQK;
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    m.d = mxfp4_half_scale(reinterpret_cast<const BlockMXFP4*>(row)[c].e);
  }
};

// Piece c is sub-block j = c % 8 of super-block c / 8: element l in nibble
// j % 2 of qs[32 (j / 2) + l] (Q5_K: a fifth bit, bit j of qh[l]); s0, s1
// its six-bit scale and min.
template <class Block, TensorType T, bool kFifthBit>
struct MmqMinK {
  static constexpr TensorType kType = T;
  static constexpr MmqKind kKind = MmqKind::MinK;
  static constexpr int kBlockElems = kQKK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const Block& b = reinterpret_cast<const Block*>(row)[c / 8];
    const int j = int(c % 8), shift = 4 * (j % 2);
    const uint8_t* q = b.qs + 32 * (j / 2) + 4 * w;
    int v[4];
    for (int i = 0; i < 4; ++i) {
      v[i] = (q[i] >> shift) & 0xF;
      if constexpr (kFifthBit) v[i] |= ((b.qh[4 * w + i] >> j) & 1) << 4;
    }
    return pack4(v[0], v[1], v[2], v[3]);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    const Block& b = reinterpret_cast<const Block*>(row)[c / 8];
    const int j = int(c % 8);
    k_scale_codes(b.scales, j, m.s0, m.s1);
    m.d = half_bits(b.d);
    m.dmin = half_bits(b.dmin);
  }
};

template <>
struct MmqFormat<TensorType::Q4_K> : MmqMinK<BlockQ4_K, TensorType::Q4_K, false> {};
template <>
struct MmqFormat<TensorType::Q5_K> : MmqMinK<BlockQ5_K, TensorType::Q5_K, true> {};

// Piece c is sub-block j = c % 8 of super-block c / 8: element l < 16 the
// low nibble of qs[16 j + l], l >= 16 the high one of qs[16 j + l - 16],
// each an IQ4_NL value; s0 the sub-block's six-bit scale less 32.
template <>
struct MmqFormat<TensorType::IQ4_XS> {
  static constexpr TensorType kType = TensorType::IQ4_XS;
  static constexpr MmqKind kKind = MmqKind::Scaled;
  static constexpr int kBlockElems = kQKK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const BlockIQ4_XS& b = reinterpret_cast<const BlockIQ4_XS*>(row)[c / 8];
    const uint8_t* q = b.qs + 16 * (c % 8) + 4 * (w % 4);
    const int shift = w < 4 ? 0 : 4;
    return pack4(iq4_value((q[0] >> shift) & 0xF), iq4_value((q[1] >> shift) & 0xF), iq4_value((q[2] >> shift) & 0xF),
                 iq4_value((q[3] >> shift) & 0xF));
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    const BlockIQ4_XS& b = reinterpret_cast<const BlockIQ4_XS*>(row)[c / 8];
    m.s0 = iq4_xs_scale_of(b, int(c % 8));
    m.d = half_bits(b.d);
  }
};

// Piece c: elements 32 r .. 32 r + 31 (r = c % 8) of super-block c / 8, two
// low bits and a third (clear: less 4; q3_k_code, quant/blocks.h); s0, s1 the
// scales of its two halves.
template <>
struct MmqFormat<TensorType::Q3_K> {
  static constexpr TensorType kType = TensorType::Q3_K;
  static constexpr MmqKind kKind = MmqKind::Half16;
  static constexpr int kBlockElems = kQKK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const BlockQ3_K& b = reinterpret_cast<const BlockQ3_K*>(row)[c / 8];
    int v[4];
    for (int i = 0; i < 4; ++i) {
      const int e = 32 * int(c % 8) + 4 * w + i;
      v[i] = k_low_bits(b.qs, e) - ((b.hmask[e % 32] >> (e / 32)) & 1 ? 0 : 4);
    }
    return pack4(v[0], v[1], v[2], v[3]);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    const BlockQ3_K& b = reinterpret_cast<const BlockQ3_K*>(row)[c / 8];
    const int r = int(c % 8);
    m.s0 = q3_k_scale_of(b.scales, 2 * r);
    m.s1 = q3_k_scale_of(b.scales, 2 * r + 1);
    m.d = half_bits(b.d);
  }
};

// Piece c: elements 32 r .. 32 r + 31 (r = c % 8) of super-block c / 8 (see
// q6_k_code, quant/blocks.h), less 32; s0, s1 the scales of its two halves.
template <>
struct MmqFormat<TensorType::Q6_K> {
  static constexpr TensorType kType = TensorType::Q6_K;
  static constexpr MmqKind kKind = MmqKind::Half16;
  static constexpr int kBlockElems = kQKK;
  PAGODA_HD static uint32_t codes(const uint8_t* row, int64_t c, int w) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c / 8];
    const int r = int(c % 8), half = r / 4, k = r % 4;
    const uint8_t* ql = b.ql + 64 * half + 32 * (k & 1) + 4 * w;
    const uint8_t* qh = b.qh + 32 * half + 4 * w;
    const int low_shift = k < 2 ? 0 : 4;
    int q[4];
    for (int i = 0; i < 4; ++i) q[i] = (((ql[i] >> low_shift) & 0xF) | (((qh[i] >> (2 * k)) & 3) << 4)) - 32;
    return pack4(q[0], q[1], q[2], q[3]);
  }
  PAGODA_HD static void meta(const uint8_t* row, int64_t c, MmqMeta& m) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c / 8];
    const int r = int(c % 8);
    m.s0 = b.scales[2 * r];
    m.s1 = b.scales[2 * r + 1];
    m.d = half_bits(b.d);
  }
};

// ------------------------------------------------------------ the tiles
// A block of kMmqWarps warps computes out for kMmqRows weight rows x
// kMmqTokens tokens: warp w rows 16 w .. 16 w + 15 of the tile, all its
// tokens as kMmqTokens / 8 mma n-tiles. The k loop takes kMmqStep 32-element
// blocks at a time (one K-quant super-block): weights and activations into
// shared memory as int8 codes, then each 32-element block is one mma k-step.
constexpr int kMmqWarps = 4;
constexpr int kMmqRows = 16 * kMmqWarps;
constexpr int kMmqTokens = 32;
constexpr int kMmqNTiles = kMmqTokens / 8;
constexpr int kMmqStep = 8;
// Words per shared row: 8 blocks of 8 words, and 4 more so that the 8 rows a
// fragment load reads fall on different banks.
constexpr int kMmqStride = 8 * kMmqStep + 4;

// The launch: blockIdx.x over row tiles, blockIdx.y over token tiles.
inline int64_t mmq_row_tiles(int64_t n_rows) { return (n_rows + kMmqRows - 1) / kMmqRows; }
inline int64_t mmq_token_tiles(int n_tokens) { return (int64_t(n_tokens) + kMmqTokens - 1) / kMmqTokens; }

// The (row, token) of accumulator i of n-tile n in lane `lane` of warp `warp`,
// relative to the block's tile.
PAGODA_HD int mmq_tile_row(int warp, int lane, int i) { return 16 * warp + mma_c_row(lane, i); }
PAGODA_HD int mmq_tile_token(int n, int lane, int i) { return 8 * n + mma_c_col(lane, i); }

// One block's tile: rows row0.. of w against up to kMmqTokens activation
// rows, token t of the tile read from row x_row(t) of the activations and
// written to row out_row(t) of out; n_valid of the tile's tokens are real.
//   w      [n_rows][k] as T (row_bytes a row)
//   codes, scales, sums: the activations as quantize_q8_kernel writes them
//   out    [..][n_rows] F32
template <TensorType T, class XRow, class OutRow>
__device__ __forceinline__ void mmq_tile(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k,
                                         const uint32_t* codes, const float* scales, const int* sums, int n_valid,
                                         XRow x_row, OutRow out_row, float* out) {
  using F = MmqFormat<T>;
  __shared__ uint32_t w_codes[kMmqRows][kMmqStride];
  __shared__ MmqMeta w_meta[kMmqRows][kMmqStep];
  __shared__ uint32_t x_codes[kMmqTokens][kMmqStride];
  __shared__ float x_scale[kMmqTokens][kMmqStep];
  __shared__ int x_sum[kMmqTokens][kMmqStep];

  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32, g = lane / 4, q = lane % 4;
  const int64_t row0 = int64_t(blockIdx.x) * kMmqRows;
  const int64_t nb = k / 32;
  float acc[kMmqNTiles][4] = {};
  int scaled[kMmqNTiles][4] = {}, mins[kMmqNTiles][4] = {};  // a super-block's integer sums (K-quants)

  for (int64_t b0 = 0; b0 < nb; b0 += kMmqStep) {
    const int n_blk = int(min(int64_t(kMmqStep), nb - b0));
    // Consecutive threads take consecutive words of a row: coalesced reads.
    for (int i = tid; i < kMmqRows * kMmqStep * 8; i += kMmqWarps * 32) {
      const int r = i / (kMmqStep * 8), blk = i / 8 % kMmqStep, wd = i % 8;
      uint32_t v = 0;  // rows past the end and blocks past k are zeros
      if (row0 + r < n_rows && blk < n_blk) v = F::codes(w + size_t(row0 + r) * row_bytes, b0 + blk, wd);
      w_codes[r][8 * blk + wd] = v;
    }
    for (int i = tid; i < kMmqRows * kMmqStep; i += kMmqWarps * 32) {
      const int r = i / kMmqStep, blk = i % kMmqStep;
      MmqMeta m{};
      if (row0 + r < n_rows && blk < n_blk) F::meta(w + size_t(row0 + r) * row_bytes, b0 + blk, m);
      w_meta[r][blk] = m;
    }
    for (int i = tid; i < kMmqTokens * kMmqStep * 8; i += kMmqWarps * 32) {
      const int t = i / (kMmqStep * 8), blk = i / 8 % kMmqStep, wd = i % 8;
      const bool in = t < n_valid && blk < n_blk;
      x_codes[t][8 * blk + wd] = in ? codes[x_row(t) * (k / 4) + 8 * (b0 + blk) + wd] : 0u;
    }
    for (int i = tid; i < kMmqTokens * kMmqStep; i += kMmqWarps * 32) {
      const int t = i / kMmqStep, blk = i % kMmqStep;
      const bool in = t < n_valid && blk < n_blk;
      x_scale[t][blk] = in ? scales[x_row(t) * nb + b0 + blk] : 0.0f;
      x_sum[t][blk] = in ? sums[x_row(t) * nb + b0 + blk] : 0;
    }
    __syncthreads();

    for (int blk = 0; blk < n_blk; ++blk) {
      // A: this warp's 16 rows, columns 4q..4q+3 and 16+4q..; B: 8 tokens, the same k.
      const uint32_t* wr = &w_codes[16 * warp + g][8 * blk];
      const uint32_t* wr8 = &w_codes[16 * warp + g + 8][8 * blk];
      const uint32_t a[4] = {wr[q], wr8[q], wr[4 + q], wr8[4 + q]};
      PAGODA_UNROLL
      for (int n = 0; n < kMmqNTiles; ++n) {
        const uint32_t* xr = &x_codes[8 * n + g][8 * blk];
        const uint32_t b[2] = {xr[q], xr[4 + q]};
        int c[4] = {0, 0, 0, 0};
        int c_hi[4] = {0, 0, 0, 0};
        if constexpr (F::kKind == MmqKind::Half16) {
          // Registers 0-1 of A hold columns 0-15, 2-3 columns 16-31: one product per half.
          const uint32_t a_lo[4] = {a[0], a[1], 0u, 0u}, a_hi[4] = {0u, 0u, a[2], a[3]};
          mma_s8_m16n8k32(a_lo, b, c);
          mma_s8_m16n8k32(a_hi, b, c_hi);
        } else {
          mma_s8_m16n8k32(a, b, c);
        }
        PAGODA_UNROLL
        for (int i = 0; i < 4; ++i) {
          const MmqMeta& m = w_meta[mmq_tile_row(warp, lane, i)][blk];
          const int t = mmq_tile_token(n, lane, i);
          if constexpr (F::kKind == MmqKind::Plain) {
            acc[n][i] = add_rn(acc[n][i], mul_rn(mul_rn(m.d, x_scale[t][blk]), float(c[i])));
          } else if constexpr (F::kKind == MmqKind::MinK) {
            scaled[n][i] += m.s0 * c[i];
            mins[n][i] += m.s1 * x_sum[t][blk];
          } else if constexpr (F::kKind == MmqKind::Scaled) {
            scaled[n][i] += m.s0 * c[i];
          } else {
            scaled[n][i] += m.s0 * c[i] + m.s1 * c_hi[i];
          }
        }
      }
    }
    if constexpr (F::kKind != MmqKind::Plain) {
      // The super-block's float step, as vec_dot_q4_k_q8_k (MinK) or vec_dot_q6_k_q8_k (the others) take it.
      PAGODA_UNROLL
      for (int n = 0; n < kMmqNTiles; ++n) PAGODA_UNROLL
      for (int i = 0; i < 4; ++i) {
        const MmqMeta& m = w_meta[mmq_tile_row(warp, lane, i)][0];
        const float xd = x_scale[mmq_tile_token(n, lane, i)][0];
        float v;
        if constexpr (F::kKind == MmqKind::MinK)
          v = mul_rn(xd, sub_rn(mul_rn(m.d, float(scaled[n][i])), mul_rn(m.dmin, float(mins[n][i]))));
        else
          v = mul_rn(mul_rn(xd, m.d), float(scaled[n][i]));
        acc[n][i] = add_rn(acc[n][i], v);
        scaled[n][i] = 0;
        mins[n][i] = 0;
      }
    }
    __syncthreads();  // before the next step overwrites the tiles
  }

  PAGODA_UNROLL
  for (int n = 0; n < kMmqNTiles; ++n) PAGODA_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int64_t r = row0 + mmq_tile_row(warp, lane, i);
    const int t = mmq_tile_token(n, lane, i);
    if (r < n_rows && t < n_valid) out[out_row(t) * n_rows + r] = acc[n][i];
  }
}

//   w      [n_rows][k] as T (row_bytes a row)
//   codes, scales, sums: the activations as quantize_q8_kernel writes them
//   out    [n_tokens][n_rows] F32
template <TensorType T>
__global__ void __launch_bounds__(kMmqWarps * 32)
    mmq_kernel(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const uint32_t* codes,
               const float* scales, const int* sums, int n_tokens, float* out) {
  const int tok0 = int(blockIdx.y) * kMmqTokens;
  auto row = [tok0](int t) { return int64_t(tok0 + t); };
  mmq_tile<T>(w, row_bytes, n_rows, k, codes, scales, sums, min(kMmqTokens, n_tokens - tok0), row, row, out);
}

// mmq over a mixture of experts' slots (moe.h): blocks of row tiles (x) for
// each tile of up to kMmqTokens slots of one expert (y); slot s reads
// activation row s / x_per_slot and writes out row s.
//   w    the expert stack: expert e's [n_rows][k] at w + e * expert_bytes
//   out  [n_slots][n_rows] F32
// (One block an SM at least: without the hint ptxas held it to 80-96 registers and spilled.)
template <TensorType T>
__global__ void __launch_bounds__(kMmqWarps * 32, 1)
    mmq_experts_kernel(const uint8_t* w, size_t expert_bytes, size_t row_bytes, int64_t n_rows, int64_t k,
                       const uint32_t* codes, const float* scales, const int* sums, int x_per_slot,
                       const int32_t* order, const ExpertTile* tiles, float* out) {
  // The tile's slots and their activation rows, once, where every thread reads them.
  __shared__ int32_t slot[kMmqTokens], x_row[kMmqTokens];
  const int count = tiles[blockIdx.y].count;
  if (count == 0) return;  // the whole block: no barrier is left waiting
  if (int(threadIdx.x) < count) {
    slot[threadIdx.x] = order[tiles[blockIdx.y].first + int(threadIdx.x)];
    x_row[threadIdx.x] = slot[threadIdx.x] / x_per_slot;
  }
  __syncthreads();
  mmq_tile<T>(
      w + size_t(tiles[blockIdx.y].expert) * expert_bytes, row_bytes, n_rows, k, codes, scales, sums, count,
      [](int t) { return int64_t(x_row[t]); }, [](int t) { return int64_t(slot[t]); }, out);
}

// ------------------------------------------------------------ mmvq
// A few tokens (decode, 1 to kMaxMatvecTokens) against the weights on the
// CUDA cores, from the same quantized activations: a warp a row, its lanes
// over the row's 32-element blocks (c = lane, lane + 32, ...), each block's
// codes dotted with every token's by dp4a and scaled by its kind's rule. A
// K-quant super-block's 8 blocks sit in 8 adjacent lanes, which fold their
// integer sums before its float step. Against matvec's F32 activations each
// lane reads a quarter of the bytes, in 16-byte loads. The same terms as the
// CPU's integer dots; only the order of the float sum across blocks differs.
constexpr int kMmvqWarps = 4;  // rows per block of threads

inline int64_t mmvq_blocks(int64_t n_rows) { return (n_rows + kMmvqWarps - 1) / kMmvqWarps; }

// The 8 adjacent lanes of a super-block fold v; each gets the sum.
__device__ __forceinline__ int sum_8_lanes(int v) {
  PAGODA_UNROLL
  for (int o = 1; o < 8; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// acc[t] += row . x_t over this lane's blocks, for t < n_tokens, x_t the
// activations' row x_row(t) as quantize_q8_kernel wrote them (codes 16-byte
// aligned). Every lane of the warp calls it (it shuffles); the caller sums
// acc over the warp. mmvq_kernel and mmvq_experts_kernel share it.
template <TensorType T, class XRow>
__device__ __forceinline__ void mmvq_lane_dots(const uint8_t* row, int64_t k, int lane, int n_tokens,
                                               const uint32_t* codes, const float* scales, const int* sums, XRow x_row,
                                               float (&acc)[kMaxMatvecTokens]) {
  using F = MmqFormat<T>;
  const int64_t nb = k / 32;
  for (int64_t c0 = 0; c0 < nb; c0 += 32) {  // uniform over the warp: every lane reaches the shuffles
    const int64_t c = c0 + lane;
    const bool in = c < nb;  // a K-quant's 8 lanes are all in or all out (nb is a multiple of 8)
    uint32_t wc[8] = {};
    MmqMeta m{};
    if (in) {
      PAGODA_UNROLL
      for (int i = 0; i < 8; ++i) wc[i] = F::codes(row, c, i);
      F::meta(row, c, m);
    }
    PAGODA_UNROLL
    for (int t = 0; t < kMaxMatvecTokens; ++t) {
      if (t >= n_tokens) continue;  // uniform over the warp
      const int64_t xr = x_row(t);
      int dot = 0, dot_hi = 0;  // Half16: elements 0-15, then 16-31
      if (in) {
        const uint4* x = reinterpret_cast<const uint4*>(codes + xr * (k / 4) + 8 * c);
        const uint4 lo = x[0], hi = x[1];
        const uint32_t xc[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        PAGODA_UNROLL
        for (int i = 0; i < 8; ++i) {
          if (F::kKind == MmqKind::Half16 && i >= 4)
            dot_hi = dot4_s8(wc[i], xc[i], dot_hi);
          else
            dot = dot4_s8(wc[i], xc[i], dot);
        }
      }
      const float xd = in ? scales[xr * nb + c] : 0.0f;
      if constexpr (F::kKind == MmqKind::Plain) {
        if (in) acc[t] = add_rn(acc[t], mul_rn(mul_rn(m.d, xd), float(dot)));
      } else {
        // The super-block's integer sums, as block_dot_q4_k (MinK) or block_dot_q6_k take them.
        const int scaled = sum_8_lanes(F::kKind == MmqKind::Half16 ? m.s0 * dot + m.s1 * dot_hi : m.s0 * dot);
        const int mins = F::kKind == MmqKind::MinK ? sum_8_lanes(in ? m.s1 * sums[xr * nb + c] : 0) : 0;
        if (in && lane % 8 == 0) {  // the super-block's first block: its d, dmin and x scale
          const float v = F::kKind == MmqKind::MinK
                              ? mul_rn(xd, sub_rn(mul_rn(m.d, float(scaled)), mul_rn(m.dmin, float(mins))))
                              : mul_rn(mul_rn(xd, m.d), float(scaled));
          acc[t] = add_rn(acc[t], v);
        }
      }
    }
  }
}

//   w      [n_rows][k] as T (row_bytes a row)
//   codes, scales, sums: n_tokens rows as quantize_q8_kernel writes them
//   out    [n_tokens][n_rows] F32
template <TensorType T>
__global__ void __launch_bounds__(kMmvqWarps * 32)
    mmvq_kernel(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t k, const uint32_t* codes,
                const float* scales, const int* sums, int n_tokens, float* out) {
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kMmvqWarps + threadIdx.x / 32;
  if (r >= n_rows) return;  // the whole warp leaves together, before any shuffle
  float acc[kMaxMatvecTokens] = {};
  mmvq_lane_dots<T>(
      w + size_t(r) * row_bytes, k, lane, n_tokens, codes, scales, sums, [](int t) { return int64_t(t); }, acc);
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0 && t < n_tokens) out[t * n_rows + r] = s;
  }
}

// mmvq over a mixture of experts' slots (moe.h), as matvec_experts: blocks
// of kMmvqWarps rows (x) for each tile of up to kExpertTileSlots slots of one
// expert (y); slot s reads activation row s / x_per_slot and writes out row s.
//   w    the expert stack: expert e's [n_rows][k] at w + e * expert_bytes
//   out  [n_slots][n_rows] F32
template <TensorType T>
__global__ void __launch_bounds__(kMmvqWarps * 32)
    mmvq_experts_kernel(const uint8_t* w, size_t expert_bytes, size_t row_bytes, int64_t n_rows, int64_t k,
                        const uint32_t* codes, const float* scales, const int* sums, int x_per_slot,
                        const int32_t* order, const ExpertTile* tiles, float* out) {
  const ExpertTile tile = tiles[blockIdx.y];
  const int lane = threadIdx.x % 32;
  const int64_t r = int64_t(blockIdx.x) * kMmvqWarps + threadIdx.x / 32;
  if (tile.count == 0 || r >= n_rows) return;  // whole warps leave, before any shuffle
  int32_t slot[kMaxMatvecTokens];
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) slot[t] = t < tile.count ? order[tile.first + t] : 0;
  float acc[kMaxMatvecTokens] = {};
  mmvq_lane_dots<T>(
      w + size_t(tile.expert) * expert_bytes + size_t(r) * row_bytes, k, lane, tile.count, codes, scales, sums,
      [&](int t) { return int64_t(slot[t] / x_per_slot); }, acc);
  PAGODA_UNROLL
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0 && t < tile.count) out[int64_t(slot[t]) * n_rows + r] = s;
  }
}

// Calls f(MmqFormat tag) for a type mmq takes; cudaErrorInvalidValue for any other.
template <class F>
cudaError_t dispatch_mmq_type(TensorType t, F&& f) {
  switch (t) {
    case TensorType::Q8_0: return f(MmqFormat<TensorType::Q8_0>{});
    case TensorType::Q4_0: return f(MmqFormat<TensorType::Q4_0>{});
    case TensorType::Q5_0: return f(MmqFormat<TensorType::Q5_0>{});
    case TensorType::IQ4_NL: return f(MmqFormat<TensorType::IQ4_NL>{});
    case TensorType::MXFP4: return f(MmqFormat<TensorType::MXFP4>{});
    case TensorType::Q4_K: return f(MmqFormat<TensorType::Q4_K>{});
    case TensorType::Q5_K: return f(MmqFormat<TensorType::Q5_K>{});
    case TensorType::IQ4_XS: return f(MmqFormat<TensorType::IQ4_XS>{});
    case TensorType::Q3_K: return f(MmqFormat<TensorType::Q3_K>{});
    case TensorType::Q6_K: return f(MmqFormat<TensorType::Q6_K>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
