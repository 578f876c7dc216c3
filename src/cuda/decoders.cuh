// One decoder per weight type the kernels read. Host and device functions
// both: the kernels call them, and tests/cuda/decoders_test.cpp checks them on
// the CPU against src/quant's scalar decoders (no GPU needed).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/portable.cuh"
#include "gguf/types.h"
#include "quant/blocks.h"

namespace pagoda::cuda::detail {

// An F16 bit pattern as a float (exact).
PAGODA_HD float half_bits(uint16_t b) { return __half2float(__ushort_as_half(b)); }

// Decoder<T>::decode(row, c, out) writes elements [c * kChunk, (c + 1) * kChunk)
// of a row stored as T. kChunk is 32 for the block formats (a Q8_0/Q4_0 block, a
// 32-element piece of a K-quant super-block) and 1 for F32/F16, whose rows may
// have any length. Blocks are read through the layouts of quant/blocks.h, whose
// widest field is 16 bits, so every load is a byte or 16-bit one (Q8_0 and Q6_K
// blocks are only 2-byte aligned in a row). The arithmetic rounds as the scalar
// decoders of src/quant do (mul_rn and friends keep nvcc from fusing into an
// FMA), so decoded values are bit-identical to the CPU's.
template <TensorType T>
struct Decoder;

template <>
struct Decoder<TensorType::F32> {
  static constexpr int kChunk = 1;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    out[0] = reinterpret_cast<const float*>(row)[c];
  }
};

template <>
struct Decoder<TensorType::F16> {
  static constexpr int kChunk = 1;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    out[0] = half_bits(reinterpret_cast<const uint16_t*>(row)[c]);
  }
};

// BF16: the top half of an F32 (exact).
template <>
struct Decoder<TensorType::BF16> {
  static constexpr int kChunk = 1;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    out[0] = bits_float(uint32_t(reinterpret_cast<const uint16_t*>(row)[c]) << 16);
  }
};

template <>
struct Decoder<TensorType::Q8_0> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[c];
    const float d = half_bits(b.d);
    PAGODA_UNROLL
    for (int l = 0; l < kQK; ++l) out[l] = mul_rn(d, float(b.qs[l]));
  }
};

template <>
struct Decoder<TensorType::Q4_0> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[c];
    const float d = half_bits(b.d);
    PAGODA_UNROLL
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q = b.qs[j];
      out[j] = mul_rn(d, float(int(q & 0xF) - 8));
      out[j + kQK / 2] = mul_rn(d, float(int(q >> 4) - 8));
    }
  }
};

// Q5_0 and Q5_1: Q4_0's nibbles and a fifth bit, bit i of the 32-bit qh
// (read byte by byte: the block is only 2-byte aligned).
PAGODA_HD int q5_code(const uint8_t* qs, const uint8_t* qh, int i) {
  const int low = i < kQK / 2 ? (qs[i] & 0xF) : (qs[i - kQK / 2] >> 4);
  return low | (((qh[i / 8] >> (i % 8)) & 1) << 4);
}

template <>
struct Decoder<TensorType::Q5_0> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[c];
    const float d = half_bits(b.d);
    PAGODA_UNROLL
    for (int i = 0; i < kQK; ++i) out[i] = mul_rn(d, float(q5_code(b.qs, b.qh, i) - 16));
  }
};

template <>
struct Decoder<TensorType::Q5_1> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ5_1& b = reinterpret_cast<const BlockQ5_1*>(row)[c];
    const float d = half_bits(b.d), m = half_bits(b.m);
    PAGODA_UNROLL
    for (int i = 0; i < kQK; ++i) out[i] = add_rn(mul_rn(float(q5_code(b.qs, b.qh, i)), d), m);
  }
};

// The value a nibble of IQ4_NL / IQ4_XS stands for: quant/blocks.h's
// kIQ4NLValues, a host array the device cannot read, as a switch.
PAGODA_HD int iq4_value(int nibble) {
  switch (nibble) {
    case 0: return -127;
    case 1: return -104;
    case 2: return -83;
    case 3: return -65;
    case 4: return -49;
    case 5: return -35;
    case 6: return -22;
    case 7: return -10;
    case 8: return 1;
    case 9: return 13;
    case 10: return 25;
    case 11: return 38;
    case 12: return 53;
    case 13: return 69;
    case 14: return 89;
    default: return 113;
  }
}

template <>
struct Decoder<TensorType::IQ4_NL> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockIQ4_NL& b = reinterpret_cast<const BlockIQ4_NL*>(row)[c];
    const float d = half_bits(b.d);
    PAGODA_UNROLL
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = mul_rn(d, float(iq4_value(b.qs[j] & 0xF)));
      out[j + kQK / 2] = mul_rn(d, float(iq4_value(b.qs[j] >> 4)));
    }
  }
};

// Sub-block j's six-bit scale and min codes of a Q4_K or Q5_K block
// (unpack_q4_k_scale, quant/blocks.h, a host function the device cannot call).
PAGODA_HD void k_scale_codes(const uint8_t* scales, int j, int& sc, int& m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// The same as floats, rounded as the scalar decoders round them.
PAGODA_HD void k_scale_min(const uint8_t* scales, uint16_t d, uint16_t dmin, int j, float& scale, float& min) {
  int sc, m;
  k_scale_codes(scales, j, sc, m);
  scale = mul_rn(half_bits(d), float(sc));
  min = mul_rn(half_bits(dmin), float(m));
}

// Piece c of a Q4_K or Q5_K row is sub-block j = c % 8 of super-block c / 8:
// element l's low four bits in nibble j % 2 of qs[32 (j / 2) + l]; Q5_K's
// fifth bit is bit j of qh[l].
template <class Block, bool kFifthBit>
struct KQuantDecoder {
  static constexpr int kChunk = 32;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const Block& b = reinterpret_cast<const Block*>(row)[c / 8];
    const int j = int(c % 8);
    float scale, min;
    k_scale_min(b.scales, b.d, b.dmin, j, scale, min);
    const uint8_t* qs = b.qs + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    PAGODA_UNROLL
    for (int l = 0; l < 32; ++l) {
      int code = (qs[l] >> shift) & 0xF;
      if constexpr (kFifthBit) code |= ((b.qh[l] >> j) & 1) << 4;
      out[l] = sub_rn(mul_rn(scale, float(code)), min);
    }
  }
};

// MXFP4: an E2M1 value (kMXFP4Values, doubled: 0, 1, 2, 3, 4, 6, 8, 12 and
// their negatives, computed: the device cannot read the host's table) times
// half the block's power-of-two scale (mxfp4_scale's bit patterns, subnormal
// for e < 2), nibbles laid out as Q4_0's. Every product is exact.
PAGODA_HD int mxfp4_value(int nibble) {
  const int m = nibble & 7;
  const int magnitude = m < 4 ? m : m < 6 ? 2 * (m - 2) : 4 * (m - 4);
  return nibble & 8 ? -magnitude : magnitude;
}

PAGODA_HD float mxfp4_half_scale(uint8_t e) { return bits_float(e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23); }

template <>
struct Decoder<TensorType::MXFP4> {
  static constexpr int kChunk = kQK;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockMXFP4& b = reinterpret_cast<const BlockMXFP4*>(row)[c];
    const float d = mxfp4_half_scale(b.e);
    PAGODA_UNROLL
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = mul_rn(float(mxfp4_value(b.qs[j] & 0xF)), d);
      out[j + kQK / 2] = mul_rn(float(mxfp4_value(b.qs[j] >> 4)), d);
    }
  }
};

// Q2_K and Q3_K: piece c is sub-blocks 2 (c % 8) and 2 (c % 8) + 1 (16
// elements each) of super-block c / 8; element i's two low bits are bits
// 2 (r / 32) of qs[32 (i / 128) + r % 32], r = i % 128 (q2_k_code). Q3_K's
// third bit is bit i / 32 of hmask[i % 32] (clear: less 4, q3_k_code).
PAGODA_HD int k_low_bits(const uint8_t* qs, int i) {
  const int r = i % 128;
  return (qs[32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3;
}

template <>
struct Decoder<TensorType::Q2_K> {
  static constexpr int kChunk = 32;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ2_K& b = reinterpret_cast<const BlockQ2_K*>(row)[c / 8];
    const int first = 32 * int(c % 8);
    const float d = half_bits(b.d), dmin = half_bits(b.dmin);
    PAGODA_UNROLL
    for (int half = 0; half < 2; ++half) {
      const int j = first / 16 + half;  // d * sc * q - dmin * m, as dequantize_row_q2_k
      const float dl = mul_rn(d, float(b.scales[j] & 0xF)), ml = mul_rn(dmin, float(b.scales[j] >> 4));
      PAGODA_UNROLL
      for (int l = 0; l < 16; ++l) out[16 * half + l] = sub_rn(mul_rn(dl, float(k_low_bits(b.qs, 16 * j + l))), ml);
    }
  }
};

// Sub-block j's six-bit Q3_K scale less 32 (q3_k_scale, a host function).
PAGODA_HD int q3_k_scale_of(const uint8_t* s, int j) {
  const int low = (s[j % 8] >> (4 * (j / 8))) & 0xF;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

template <>
struct Decoder<TensorType::Q3_K> {
  static constexpr int kChunk = 32;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ3_K& b = reinterpret_cast<const BlockQ3_K*>(row)[c / 8];
    const int first = 32 * int(c % 8);
    const float d = half_bits(b.d);
    PAGODA_UNROLL
    for (int half = 0; half < 2; ++half) {
      const int j = first / 16 + half;  // d * (sc - 32) * q, as dequantize_row_q3_k
      const float dl = mul_rn(d, float(q3_k_scale_of(b.scales, j)));
      PAGODA_UNROLL
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * j + l;
        const int code = k_low_bits(b.qs, i) - ((b.hmask[i % 32] >> (i / 32)) & 1 ? 0 : 4);
        out[16 * half + l] = mul_rn(dl, float(code));
      }
    }
  }
};

template <>
struct Decoder<TensorType::Q4_K> : KQuantDecoder<BlockQ4_K, false> {};
template <>
struct Decoder<TensorType::Q5_K> : KQuantDecoder<BlockQ5_K, true> {};

// Sub-block j's six-bit IQ4_XS scale less 32 (iq4_xs_scale, a host function).
PAGODA_HD int iq4_xs_scale_of(const BlockIQ4_XS& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
  return (low | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

// Piece c of an IQ4_XS row: sub-block c % 8 of super-block c / 8, its
// six-bit scale times the nibbles' values.
template <>
struct Decoder<TensorType::IQ4_XS> {
  static constexpr int kChunk = 32;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockIQ4_XS& b = reinterpret_cast<const BlockIQ4_XS*>(row)[c / 8];
    const int j = int(c % 8);
    const float dl = mul_rn(half_bits(b.d), float(iq4_xs_scale_of(b, j)));
    const uint8_t* qs = b.qs + 16 * j;
    PAGODA_UNROLL
    for (int l = 0; l < 16; ++l) {
      out[l] = mul_rn(dl, float(iq4_value(qs[l] & 0xF)));
      out[l + 16] = mul_rn(dl, float(iq4_value(qs[l] >> 4)));
    }
  }
};

// Piece c of a Q6_K row: elements 32 r .. 32 r + 31 (r = c % 8) of super-block
// c / 8, all in one 128-element half; see q6_k_code (quant/blocks.h).
template <>
struct Decoder<TensorType::Q6_K> {
  static constexpr int kChunk = 32;
  PAGODA_HD static void decode(const uint8_t* row, int64_t c, float* out) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c / 8];
    const int r = int(c % 8), half = r / 4, k = r % 4;
    const float d = half_bits(b.d);
    const uint8_t* ql = b.ql + 64 * half + 32 * (k & 1);
    const uint8_t* qh = b.qh + 32 * half;
    const int low_shift = k < 2 ? 0 : 4;
    PAGODA_UNROLL
    for (int l = 0; l < 32; ++l) {
      const int code = ((ql[l] >> low_shift) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4);
      const float scale = mul_rn(d, float(b.scales[2 * r + l / 16]));
      out[l] = mul_rn(scale, float(code - 32));
    }
  }
};

// Calls f(Decoder-type tag) for a supported weight type; returns
// cudaErrorInvalidValue for any other.
template <class F>
cudaError_t dispatch_weight_type(TensorType t, F&& f) {
  switch (t) {
    case TensorType::F32: return f(Decoder<TensorType::F32>{});
    case TensorType::F16: return f(Decoder<TensorType::F16>{});
    case TensorType::BF16: return f(Decoder<TensorType::BF16>{});
    case TensorType::Q8_0: return f(Decoder<TensorType::Q8_0>{});
    case TensorType::Q4_0: return f(Decoder<TensorType::Q4_0>{});
    case TensorType::Q5_0: return f(Decoder<TensorType::Q5_0>{});
    case TensorType::Q5_1: return f(Decoder<TensorType::Q5_1>{});
    case TensorType::IQ4_NL: return f(Decoder<TensorType::IQ4_NL>{});
    case TensorType::MXFP4: return f(Decoder<TensorType::MXFP4>{});
    case TensorType::Q2_K: return f(Decoder<TensorType::Q2_K>{});
    case TensorType::Q3_K: return f(Decoder<TensorType::Q3_K>{});
    case TensorType::Q4_K: return f(Decoder<TensorType::Q4_K>{});
    case TensorType::Q5_K: return f(Decoder<TensorType::Q5_K>{});
    case TensorType::IQ4_XS: return f(Decoder<TensorType::IQ4_XS>{});
    case TensorType::Q6_K: return f(Decoder<TensorType::Q6_K>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace pagoda::cuda::detail
