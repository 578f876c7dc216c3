// Conversions between F32 and the 16-bit float formats stored in GGUF files
// (IEEE half and bfloat16). Bit-exact, no hardware intrinsics needed.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda {

inline float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: value = mant * 2^-24.
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / nan
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest even, as numpy and llama.cpp do.
inline uint16_t f32_to_f16(float f) {
  const uint32_t b = f32_to_bits(f);
  const uint32_t sign = (b >> 16) & 0x8000;
  const int32_t exp = int32_t((b >> 23) & 0xff) - 127 + 15;
  uint32_t mant = b & 0x7fffff;
  if (((b >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));  // inf / nan
  if (exp >= 31) return uint16_t(sign | 0x7c00);                                        // overflow
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);  // underflow to zero
    mant |= 0x800000;
    const int shift = 14 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: correct
  return uint16_t(h);
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t b = f32_to_bits(f);
  if ((b & 0x7fffffff) > 0x7f800000) return uint16_t((b >> 16) | 0x40);  // keep nan a nan
  b += 0x7fff + ((b >> 16) & 1);
  return uint16_t(b >> 16);
}

}  // namespace pagoda
