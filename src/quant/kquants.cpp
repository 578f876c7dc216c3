// The K-quant super-block formats: Q4_K, Q5_K and Q6_K (weights) and Q8_K
// (the activations their dot products take); Q2_K and Q3_K: kquants_low.cpp. Encoders choose each sub-block's
// scale (and min) by a short alternating least-squares search, then code the
// sub-block scales themselves against one F16 super-block scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "quant/scale_search.h"
#include "util/half.h"

namespace pagoda {
using scale_search::assign_error;
using scale_search::fit_scale_min;
using scale_search::fit_symmetric_scale;
using scale_search::nearest;
using scale_search::ScaleMin;

namespace {

// Sub-block j's six-bit scale and min into Q4_K's (and Q5_K's) packed bytes
// (see unpack_q4_k_scale); `s` starts zeroed.
void pack_q4_k_scale(uint8_t* s, int j, int sc, int m) {
  if (j < 4) {
    s[j] = uint8_t(sc);
    s[j + 4] = uint8_t(m);
  } else {  // the top two bits go to the spare bits of bytes j-4 and j
    s[j + 4] = uint8_t((sc & 0xF) | ((m & 0xF) << 4));
    s[j - 4] |= uint8_t((sc >> 4) << 6);
    s[j] |= uint8_t((m >> 4) << 6);
  }
}

// Q4_K and Q5_K: 8 sub-blocks of 32, codes 0..nmax against scale and min.
// Writes d, dmin and the packed scales; code(j, l, q) stores element l of
// sub-block j.
template <class Block, class Code>
void quantize_k_scale_min(const float* x, Block& out, int nmax, const Code& code) {
  ScaleMin sub[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    sub[j] = fit_scale_min(x + 32 * j, 32, nmax);
    max_scale = std::max(max_scale, sub[j].scale);
    max_min = std::max(max_min, sub[j].min);
  }
  out.d = f32_to_f16(max_scale / 63.0f);
  out.dmin = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
  std::memset(out.scales, 0, sizeof out.scales);
  for (int j = 0; j < 8; ++j) {
    const int sc = d > 0 ? std::clamp(nearest(sub[j].scale / d), 0, 63) : 0;
    const int m = dmin > 0 ? std::clamp(nearest(sub[j].min / dmin), 0, 63) : 0;
    pack_q4_k_scale(out.scales, j, sc, m);
    // Code the elements against the scale and min as stored.
    const ScaleMin stored{d * float(sc), dmin * float(m)};
    int q[32];
    assign_error(x + 32 * j, 32, nmax, stored, q);
    for (int l = 0; l < 32; ++l) code(j, l, q[l]);
  }
}

}  // namespace

void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    BlockQ4_K& out = y[b];
    std::memset(out.qs, 0, sizeof out.qs);
    quantize_k_scale_min(x, out, 15,
                         [&](int j, int l, int q) { out.qs[32 * (j / 2) + l] |= uint8_t(j % 2 == 0 ? q : q << 4); });
  }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    BlockQ5_K& out = y[b];
    std::memset(out.qs, 0, sizeof out.qs);
    std::memset(out.qh, 0, sizeof out.qh);
    quantize_k_scale_min(x, out, 31, [&](int j, int l, int q) {
      out.qs[32 * (j / 2) + l] |= uint8_t(j % 2 == 0 ? (q & 0xF) : (q & 0xF) << 4);
      out.qh[l] |= uint8_t((q >> 4) << j);
    });
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float scales[16], amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_scale(x + 16 * j, 16, 32);
      amax = std::max(amax, std::fabs(scales[j]));
    }
    BlockQ6_K& out = y[b];
    out.d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(out.d);
    std::memset(out.ql, 0, sizeof out.ql);
    std::memset(out.qh, 0, sizeof out.qh);
    for (int j = 0; j < 16; ++j) {
      const int sc = d > 0 ? std::clamp(nearest(scales[j] / d), -127, 127) : 0;
      out.scales[j] = int8_t(sc);
      const float s = d * float(sc);
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * j + l;
        const int code = (s != 0 ? std::clamp(nearest(x[i] / s), -32, 31) : 0) + 32;
        const int half = i / 128, r = i % 128, k = r / 32, col = r % 32;
        uint8_t& ql = out.ql[64 * half + col + 32 * (k & 1)];
        ql |= uint8_t(k < 2 ? (code & 0xF) : (code & 0xF) << 4);
        out.qh[32 * half + col] |= uint8_t((code >> 4) << (2 * k));
      }
    }
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float amax = 0;
    for (int i = 0; i < kQKK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d > 0 ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int i = 16 * g; i < 16 * g + 16; ++i) {
        y[b].qs[i] = int8_t(std::clamp(nearest(x[i] * id), -127, 127));
        sum += y[b].qs[i];
      }
      y[b].bsums[g] = int16_t(sum);
    }
  }
}

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      unpack_q4_k_scale(x[b].scales, j, sc, m);
      const float scale = d * float(sc), min = dmin * float(m);
      const uint8_t* qs = x[b].qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        const int q = j % 2 == 0 ? (qs[l] & 0xF) : (qs[l] >> 4);
        *y++ = scale * float(q) - min;
      }
    }
  }
}

// As ggml's to_float: d1 = d * sc, m1 = dmin * m, then d1 * q - m1.
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      unpack_q4_k_scale(x[b].scales, j, sc, m);
      const float scale = d * float(sc), min = dmin * float(m);
      for (int l = 0; l < 32; ++l) *y++ = scale * float(q5_k_code(x[b], 32 * j + l)) - min;
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int i = 0; i < kQKK; ++i) *y++ = d * float(x[b].scales[i / 16]) * float(q6_k_code(x[b], i) - 32);
  }
}

void dequantize_row_q8_k(const BlockQ8_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b)
    for (int i = 0; i < kQKK; ++i) *y++ = x[b].d * float(x[b].qs[i]);
}

}  // namespace pagoda
