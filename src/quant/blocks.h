// The quantized block layouts Pagoda reads and writes, byte for byte as ggml
// stores them in GGUF files (so files move freely between Pagoda and
// llama.cpp-style tools). Scales marked F16 are IEEE half bit patterns.
//
// 32-element blocks:            value of element i
//   Q8_0  d, qs[32]            d * qs[i]
//   Q4_0  d, qs[16] nibbles    d * (nibble(i) - 8); low nibbles hold 0..15, high 16..31
//   Q5_0  d, qh, qs[16]        d * (nibble(i) | bit i of qh << 4) - 16 * d
//   Q5_1  d, m, qh, qs[16]     d * (nibble(i) | bit i of qh << 4) + m
//   IQ4_NL d, qs[16]           d * kIQ4NLValues[nibble(i)], nibbles as Q4_0's
//   MXFP4  e, qs[16]           mxfp4_scale(e) * kMXFP4Values[nibble(i)], nibbles as Q4_0's
// 256-element super-blocks:
//   Q2_K  16 sub-blocks of 16, 4-bit scale sc and min m each: d*sc*q - dmin*m, q in 0..3
//   Q3_K  16 sub-blocks of 16, 6-bit scale sc each: d * (sc - 32) * q, q in -4..3
//   Q4_K  8 sub-blocks of 32, 6-bit scale sc and min m each: d*sc*q - dmin*m, q in 0..15
//   Q5_K  as Q4_K with q in 0..31 (a fifth bit per element in qh)
//   Q6_K  16 sub-blocks of 16, int8 scale each: d * sc * (q - 32), q in 0..63
//   IQ4_XS 8 sub-blocks of 32, 6-bit scale ls each: d * (ls - 32) * kIQ4NLValues[nibble]
//   Q8_K  activations only (never in files): d * qs[i], with sums of each 16 qs
#pragma once

#include <bit>
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

struct BlockQ5_1 {
  static constexpr int kElems = kQK;
  uint16_t d;           // F16 scale
  uint16_t m;           // F16 offset added to every element
  uint8_t qh[4];        // fifth bits, as Q5_0's
  uint8_t qs[kQK / 2];  // low four bits, laid out as Q4_0's
};
static_assert(sizeof(BlockQ5_1) == 24);

// The 16 values a nibble of IQ4_NL and IQ4_XS stands for (a fact of the
// format: a fixed non-linear grid, denser near zero).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct BlockIQ4_NL {
  static constexpr int kElems = kQK;
  uint16_t d;           // F16 scale
  uint8_t qs[kQK / 2];  // table indices, laid out as Q4_0's nibbles
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// The 16 values a nibble of MXFP4 stands for: the E2M1 floats (sign, two
// exponent bits, one mantissa bit) doubled, so they are integers, as ggml
// keeps them; mxfp4_scale halves the block scale to make up for it.
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

struct BlockMXFP4 {
  static constexpr int kElems = kQK;
  uint8_t e;            // E8M0 scale: a bare exponent, the scale 2^(e - 127)
  uint8_t qs[kQK / 2];  // table indices, laid out as Q4_0's nibbles
};
static_assert(sizeof(BlockMXFP4) == 17);

// Half an MXFP4 block's scale, 2^(e - 128), as a float: the factor of the
// doubled table values. ggml's bit patterns: subnormal for e < 2, and no
// Inf or NaN (e = 255 is 2^127; the OCP format's NaN code is not special).
constexpr float mxfp4_scale(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23);
}

struct BlockQ2_K {
  static constexpr int kElems = kQKK;
  uint8_t scales[kQKK / 16];  // sub-block j: scale in the low nibble, min in the high one
  uint8_t qs[kQKK / 4];       // 2-bit codes, see q2_k_code
  uint16_t d;                 // F16 scale of the sub-block scales
  uint16_t dmin;              // F16 scale of the sub-block mins
};
static_assert(sizeof(BlockQ2_K) == 84);

struct BlockQ3_K {
  static constexpr int kElems = kQKK;
  uint8_t hmask[kQKK / 8];  // the third bit of each code (set: no -4), see q3_k_code
  uint8_t qs[kQKK / 4];     // low two bits, laid out as Q2_K's
  uint8_t scales[12];       // 16 six-bit scales, packed (see q3_k_scale)
  uint16_t d;               // F16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

struct BlockQ4_K {
  static constexpr int kElems = kQKK;
  uint16_t d;            // F16 scale of the sub-block scales
  uint16_t dmin;         // F16 scale of the sub-block mins
  uint8_t scales[12];    // 8 six-bit scales and 8 six-bit mins, packed (see unpack_q4_k_scale)
  uint8_t qs[kQKK / 2];  // per 64 elements, 32 bytes: low nibbles the first 32, high the next 32
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  static constexpr int kElems = kQKK;
  uint16_t d;            // F16 scale of the sub-block scales
  uint16_t dmin;         // F16 scale of the sub-block mins
  uint8_t scales[12];    // packed as Q4_K's
  uint8_t qh[kQKK / 8];  // bit j of qh[l]: fifth bit of element 32 j + l
  uint8_t qs[kQKK / 2];  // low four bits, laid out as Q4_K's
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockIQ4_XS {
  static constexpr int kElems = kQKK;
  uint16_t d;                   // F16 super-block scale
  uint16_t scales_h;            // top two bits of sub-block j's scale at bits 2j, 2j+1
  uint8_t scales_l[kQKK / 64];  // low four bits: sub-block 2i in the low nibble of byte i, 2i+1 in the high
  uint8_t qs[kQKK / 2];         // per 32 elements, 16 bytes of table indices laid out as Q4_0's
};
static_assert(sizeof(BlockIQ4_XS) == 136);

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

// Element i (0..255) of a Q5_K block as its unsigned code 0..31: Q4_K's
// nibble and the fifth bit, bit i / 32 of qh[i % 32].
inline int q5_k_code(const BlockQ5_K& b, int i) {
  const int chunk = i / 64, l = i % 32;
  const uint8_t q = b.qs[32 * chunk + l];
  const int low = i % 64 < 32 ? (q & 0xF) : (q >> 4);
  return low | (((b.qh[l] >> (i / 32)) & 1) << 4);
}

// Element i (0..255) of a Q2_K block as its code 0..3. Per 128 elements, 32
// bytes of qs; element l + 32k (l < 32, k < 4) is bits 2k..2k+1 of byte l.
inline int q2_k_code(const BlockQ2_K& b, int i) {
  const int half = i / 128, r = i % 128;
  return (b.qs[32 * half + r % 32] >> (2 * (r / 32))) & 3;
}

// Element i of a Q3_K block as its value -4..3: the two bits q2_k_code would
// read, less 4 unless bit (i / 32) of hmask[i % 32] is set.
inline int q3_k_code(const BlockQ3_K& b, int i) {
  const int half = i / 128, r = i % 128;
  const int low = (b.qs[32 * half + r % 32] >> (2 * (r / 32))) & 3;
  return low - ((b.hmask[i % 32] >> (i / 32)) & 1 ? 0 : 4);
}

// Sub-block j (0..15) of a Q3_K block: its scale -32..31. The low four bits
// are nibble j / 8 of byte j % 8, the top two bits j / 4 of byte 8 + j % 4.
inline int q3_k_scale(const uint8_t* s, int j) {
  const int low = (s[j % 8] >> (4 * (j / 8))) & 0xF;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Sub-block j (0..7) of an IQ4_XS block: its scale -32..31.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
  return (low | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

}  // namespace pagoda
