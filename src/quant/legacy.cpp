// The 32-element block formats Q8_0, Q4_0, Q5_0 and Q5_1: encoders rounding
// as ggml's reference quantizers do (so a file Pagoda writes holds the blocks
// llama.cpp's quantize would write), and their decoders.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "util/half.h"

namespace pagoda {
namespace {

// The element of largest magnitude, sign kept: Q4_0 and Q5_0 map it to the
// most negative code, which the asymmetric code range (-8..7, -16..15) reaches.
float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

// Code of v * id (in [-half, half]) offset by half, rounded to nearest, capped
// at 2 * half - 1: truncating after adding half + 0.5 rounds because the sum
// is not negative. The comparisons come first so an infinite product (from
// a subnormal block's scale) never reaches the int conversion.
int offset_code(float v, float id, int half) {
  const float s = v * id + float(half) + 0.5f;
  if (!(s > 0)) return 0;
  return s >= float(2 * half - 1) ? 2 * half - 1 : int(s);
}

// Code of v * id (v >= 0 up to rounding) rounded to nearest, capped at nmax;
// comparisons first, as offset_code's.
int unsigned_code(float v, float id, int nmax) {
  const float s = v * id + 0.5f;
  if (!(s > 0)) return 0;
  return s >= float(nmax) ? nmax : int(s);
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = int8_t(std::lround(x[j] * id));
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = signed_absmax(x, kQK) / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j)
      y[i].qs[j] = uint8_t(offset_code(x[j], id, 8) | (offset_code(x[j + kQK / 2], id, 8) << 4));
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = signed_absmax(x, kQK) / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = offset_code(x[j], id, 16), hi = offset_code(x[j + kQK / 2], id, 16);
      y[i].qs[j] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= uint32_t(lo >> 4) << j;
      qh |= uint32_t(hi >> 4) << (j + kQK / 2);
    }
    std::memcpy(y[i].qh, &qh, 4);  // GGUF is little-endian, like every machine Pagoda targets
  }
}

// Codes (x - min) / d rounded, 0..31: the block's range mapped onto the codes.
void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    float min = x[0], max = x[0];
    for (int j = 1; j < kQK; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 31.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    y[i].m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = unsigned_code(x[j] - min, id, 31), hi = unsigned_code(x[j + kQK / 2] - min, id, 31);
      y[i].qs[j] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= uint32_t(lo >> 4) << j;
      qh |= uint32_t(hi >> 4) << (j + kQK / 2);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK; ++j) y[i * kQK + j] = d * float(x[i].qs[j]);
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * float((x[i].qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * float((x[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = f16_to_f32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (x[i].qs[j] & 0xF) | int((qh >> j) & 1) << 4;
      const int hi = (x[i].qs[j] >> 4) | int((qh >> (j + kQK / 2)) & 1) << 4;
      y[j] = d * float(lo - 16);
      y[j + kQK / 2] = d * float(hi - 16);
    }
  }
}

// As ggml's to_float: q * d + m.
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = f16_to_f32(x[i].d), m = f16_to_f32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (x[i].qs[j] & 0xF) | int((qh >> j) & 1) << 4;
      const int hi = (x[i].qs[j] >> 4) | int((qh >> (j + kQK / 2)) & 1) << 4;
      y[j] = float(lo) * d + m;
      y[j + kQK / 2] = float(hi) * d + m;
    }
  }
}

}  // namespace pagoda
