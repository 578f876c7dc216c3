// The non-linear 4-bit formats IQ4_NL (32-element blocks) and IQ4_XS
// (256-element super-blocks with 6-bit sub-block scales): every code indexes
// the fixed table kIQ4NLValues. The encoders search a scale per 32 elements
// (their own search: valid blocks, error close to llama.cpp's); the decoders
// compute ggml's float expressions, so they equal its to_float bit for bit.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "quant/scale_search.h"
#include "util/half.h"

namespace pagoda {
namespace {

// The midpoints between neighbouring table values.
constexpr auto kIQ4Midpoints = [] {
  std::array<float, 15> m{};
  for (int i = 0; i < 15; ++i) m[size_t(i)] = 0.5f * float(kIQ4NLValues[i] + kIQ4NLValues[i + 1]);
  return m;
}();

// The table index whose value is nearest v (v in table units): how many
// midpoints lie below v, by binary search (the encoders call this for every
// element of every candidate scale). NaN gives 0.
int nearest_iq4_index(float v) {
  int i = 0;  // without branches: v's comparisons are unpredictable
  for (int step = 8; step > 0; step /= 2) i += step * int(v > kIQ4Midpoints[size_t(i + step - 1)]);
  return i;
}

// Indices of x (n elements) against scale s, and the squared error; s = 0
// codes every element as the value nearest zero. Also the least-squares
// scale for those indices (s where there is none).
float iq4_assign(const float* x, int n, float s, uint8_t* q, float* refit = nullptr) {
  const float inv = s != 0 ? 1.0f / s : 0.0f;
  float err = 0, sxv = 0, svv = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = uint8_t(nearest_iq4_index(x[i] * inv));
    const float v = float(kIQ4NLValues[q[i]]), e = s * v - x[i];
    err += e * e;
    sxv += x[i] * v;
    svv += v * v;
  }
  if (refit) *refit = svv > 0 ? sxv / svv : s;
  return err;
}

// The scale of 32 elements: 9 starts around max / -127 (the element of
// largest magnitude on the table's wider end), then the least-squares refit
// of the best start's indices; whichever codes x with less squared error.
float fit_iq4_scale(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  uint8_t q[32];
  float best = 0, best_err = 0, best_refit = 0;
  for (int step = -4; step <= 4; ++step) {
    const float s = max / (-127.0f + 5.0f * float(step));
    float refit;
    const float err = iq4_assign(x, n, s, q, &refit);
    if (step == -4 || err < best_err) {
      best_err = err;
      best = s;
      best_refit = refit;
    }
  }
  return iq4_assign(x, n, best_refit, q) < best_err ? best_refit : best;
}

// 32 indices as 16 bytes: element j in the low nibble of byte j, j + 16 in the high one.
void pack_iq4_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t(q[j] | (q[j + 16] << 4));
}

}  // namespace

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    y[i].d = f32_to_f16(fit_iq4_scale(x, kQK));
    uint8_t q[kQK];
    iq4_assign(x, kQK, f16_to_f32(y[i].d), q);  // against the scale as stored
    pack_iq4_nibbles(q, y[i].qs);
  }
}

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float scales[8], amax = 0, max = 0;
    for (int j = 0; j < 8; ++j) {
      scales[j] = fit_iq4_scale(x + 32 * j, 32);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max = scales[j];
      }
    }
    BlockIQ4_XS& out = y[b];
    out.d = f32_to_f16(-max / 32.0f);  // the widest scale takes -32, the end with the larger reach
    const float d = f16_to_f32(out.d);
    out.scales_h = 0;
    std::memset(out.scales_l, 0, sizeof out.scales_l);
    for (int j = 0; j < 8; ++j) {
      const int ls = (d != 0 ? std::clamp(scale_search::nearest(scales[j] / d), -32, 31) : 0) + 32;
      out.scales_l[j / 2] |= uint8_t((ls & 0xF) << (4 * (j % 2)));
      out.scales_h = uint16_t(out.scales_h | (ls >> 4) << (2 * j));
      uint8_t q[32];
      iq4_assign(x + 32 * j, 32, d * float(ls - 32), q);
      pack_iq4_nibbles(q, out.qs + 16 * j);
    }
  }
}

// As ggml's to_float: d * value.
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * float(kIQ4NLValues[x[i].qs[j] & 0xF]);
      y[j + kQK / 2] = d * float(kIQ4NLValues[x[i].qs[j] >> 4]);
    }
  }
}

// As ggml's to_float: dl = d * (ls - 32), then dl * value.
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < 8; ++j, y += 32) {
      const float dl = d * float(iq4_xs_scale(x[b], j));
      const uint8_t* qs = x[b].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * float(kIQ4NLValues[qs[l] & 0xF]);
        y[l + 16] = dl * float(kIQ4NLValues[qs[l] >> 4]);
      }
    }
  }
}

}  // namespace pagoda
