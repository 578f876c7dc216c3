// The quantized block layouts Pagoda reads and writes, byte for byte as ggml
// stores them in GGUF files (so files move freely between Pagoda and
// llama.cpp-style tools). Scales marked F16 are IEEE half bit patterns.
//
// 32-element blocks:            value of element i
//   Q8_0  d, qs[32]            d * qs[i]
//   Q4_0  d, qs[16] nibbles    d * (nibble(i) - 8); low nibbles hold 0..15, high 16..31
//   Q5_0  d, qh, qs[16]        d * (nibble(i) | bit i of qh << 4) - 16 * d
// 256-element super-blocks:
//   Q4_K  8 sub-blocks of 32, 6-bit scale sc and min m each: d*sc*q - dmin*m, q in 0..15
//   Q6_K  16 sub-blocks of 16, int8 scale each: d * sc * (q - 32), q in 0..63
//   Q8_K  activations only (never in files): d * qs[i], with sums of each 16 qs
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda {

inline constexpr int kQK = 32;    // elements per block of the 32-element formats
inline constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ8_0 {
  static constexpr int kElems = kQK;
  uint16_t d;  // F16 scale
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  static constexpr int kElems = kQK;
  uint16_t d;           // F16 scale
  uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], element j+16 in the high one
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ5_0 {
  static constexpr int kElems = kQK;
  uint16_t d;           // F16 scale
  uint8_t qh[4];        // bit i (of the little-endian 32-bit word) = fifth bit of element i
  uint8_t qs[kQK / 2];  // low four bits, laid out as Q4_0's
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ4_K {
  static constexpr int kElems = kQKK;
  uint16_t d;            // F16 scale of the sub-block scales
  uint16_t dmin;         // F16 scale of the sub-block mins
  uint8_t scales[12];    // 8 six-bit scales and 8 six-bit mins, packed (see unpack_q4_k_scale)
  uint8_t qs[kQKK / 2];  // per 64 elements, 32 bytes: low nibbles the first 32, high the next 32
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ6_K {
  static constexpr int kElems = kQKK;
  uint8_t ql[kQKK / 2];  // low four bits
  uint8_t qh[kQKK / 4];  // high two bits
  int8_t scales[kQKK / 16];
  uint16_t d;  // F16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockQ8_K {
  static constexpr int kElems = kQKK;
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sum of each 16 consecutive qs: the mins of Q4_K need only these
};
static_assert(sizeof(BlockQ8_K) == 292);

// Sub-block j (0..7) of a Q4_K block: its six-bit scale and min. Sub-blocks
// 0-3 keep both in the low six bits of bytes j and j+4; sub-blocks 4-7 keep
// their low four bits in byte j+4 and their top two bits in the spare top
// bits of bytes j-4 (scale) and j (min).
inline void unpack_q4_k_scale(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Element i (0..255) of a Q6_K block as its unsigned six-bit code 0..63.
// Per 128 elements: 64 ql bytes and 32 qh bytes; element l + 32k (l < 32,
// k < 4) takes the low or high nibble of ql[l + 32 (k & 1)] and bits 2k..2k+1
// of qh[l].
inline int q6_k_code(const BlockQ6_K& b, int i) {
  const int half = i / 128, r = i % 128, k = r / 32, l = r % 32;
  const uint8_t ql = b.ql[64 * half + l + 32 * (k & 1)];
  const int low = k < 2 ? (ql & 0xF) : (ql >> 4);
  const int high = (b.qh[32 * half + l] >> (2 * k)) & 3;
  return low | (high << 4);
}

}  // namespace pagoda
