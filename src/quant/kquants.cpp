// The K-quant super-block formats: Q4_K and Q6_K (weights) and Q8_K (the
// activations their dot products take). Encoders choose each sub-block's
// scale (and min) by a short alternating least-squares search, then code the
// sub-block scales themselves against one F16 super-block scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "util/half.h"

namespace pagoda {
namespace {

// Round to nearest (ties to even) by the float-magic trick: far cheaper than
// lround, which the searches below call for every element of every candidate.
// Inputs are clamped first; every caller clamps the code to a small range.
int nearest(float v) {
  const float f = std::clamp(v, -4.0e6f, 4.0e6f) + 12582912.0f;  // 1.5 * 2^23
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// The searches' effort: starting ranges (fractions of the full range) and
// refinement rounds per start. More buys little: on Gaussian rows four starts
// lower Q4_K's RMS error by 0.4% and Q6_K's by 0.2%, at twice the time.
constexpr float kStarts4[] = {1.0f, 0.9f};
constexpr int kRounds4 = 3;
constexpr float kStarts6[] = {1.0f};
constexpr int kRounds6 = 3;

// x ~ scale * q - min with q in 0..nmax, scale >= 0 and min >= 0 (the format
// stores mins as unsigned, so a sub-block never gets a positive offset).
struct ScaleMin {
  float scale = 0, min = 0;
};

float assign_error(const float* x, int n, int nmax, ScaleMin p, int* q) {
  float err = 0;
  const float inv = p.scale > 0 ? 1.0f / p.scale : 0.0f;  // scale 0: every code 0
  for (int i = 0; i < n; ++i) {
    q[i] = std::clamp(nearest((x[i] + p.min) * inv), 0, nmax);
    const float e = p.scale * float(q[i]) - p.min - x[i];
    err += e * e;
  }
  return err;
}

// Best (scale, min) for fixed codes q: least squares on a*q + b ~ x with b <= 0.
bool refit(const float* x, const int* q, int n, ScaleMin& p) {
  int s1 = 0, s2 = 0;
  float sx = 0, sqx = 0;
  for (int i = 0; i < n; ++i) {
    s1 += q[i];
    s2 += q[i] * q[i];
    sx += x[i];
    sqx += float(q[i]) * x[i];
  }
  const float det = float(s2 * n - s1 * s1);  // exact: integers far below 2^24
  float a = 0, b = 0;
  if (det > 0) {
    a = (float(n) * sqx - float(s1) * sx) / det;
    b = (float(s2) * sx - float(s1) * sqx) / det;
  }
  if (det <= 0 || b > 0) {  // the unconstrained fit wants a positive offset: pin it to zero
    if (s2 <= 0) return false;
    b = 0;
    a = sqx / float(s2);
  }
  if (!(a > 0)) return false;
  p = {a, -b};
  return true;
}

// Searches a sub-block's (scale, min): starts from the range mapped onto the
// codes and from a narrower one (clipping the extremes can lower the error of
// the rest), and improves each start by alternating code assignment and
// refitting.
ScaleMin fit_scale_min(const float* x, int n, int nmax) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (!(hi > lo)) return {0, -lo};
  int q[32];
  ScaleMin best{(hi - lo) / float(nmax), -lo};
  float best_err = assign_error(x, n, nmax, best, q);
  for (float shrink : kStarts4) {
    ScaleMin p{(hi - lo) * shrink / float(nmax), -lo * shrink};
    assign_error(x, n, nmax, p, q);
    for (int round = 0; round < kRounds4; ++round) {
      if (!refit(x, q, n, p)) break;
      const float err = assign_error(x, n, nmax, p, q);  // also the next round's codes
      if (err < best_err) {
        best_err = err;
        best = p;
      }
    }
  }
  return best;
}

// x ~ scale * q with q in -32..31 (Q6_K's codes less 32). A negative scale is
// allowed (the stored scales are signed), so the element of largest magnitude
// can always take the code -32, the end with the larger reach.
float fit_symmetric_scale(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  // Error of coding x with scale s; also the least-squares scale for those codes.
  auto try_scale = [&](float s, float& refit) {
    const float inv = 1.0f / s;
    float err = 0, sqx = 0;
    int sqq = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(nearest(x[i] * inv), -32, 31);
      const float e = s * float(q) - x[i];
      err += e * e;
      sqx += float(q) * x[i];
      sqq += q * q;
    }
    refit = sqq > 0 && sqx != 0 ? sqx / float(sqq) : s;
    return err;
  };
  float best = -max / 32.0f, next;
  float best_err = try_scale(best, next);
  for (float shrink : kStarts6) {
    float s = -max / 32.0f * shrink;
    for (int round = 0; round < kRounds6; ++round) {
      const float err = try_scale(s, next);
      if (err < best_err) {
        best_err = err;
        best = s;
      }
      s = next;
    }
  }
  return best;
}

}  // namespace

void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    ScaleMin sub[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      sub[j] = fit_scale_min(x + 32 * j, 32, 15);
      max_scale = std::max(max_scale, sub[j].scale);
      max_min = std::max(max_min, sub[j].min);
    }
    BlockQ4_K& out = y[b];
    out.d = f32_to_f16(max_scale / 63.0f);
    out.dmin = f32_to_f16(max_min / 63.0f);
    const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
    std::memset(out.scales, 0, sizeof out.scales);
    std::memset(out.qs, 0, sizeof out.qs);
    for (int j = 0; j < 8; ++j) {
      const int sc = d > 0 ? std::clamp(nearest(sub[j].scale / d), 0, 63) : 0;
      const int m = dmin > 0 ? std::clamp(nearest(sub[j].min / dmin), 0, 63) : 0;
      if (j < 4) {
        out.scales[j] = uint8_t(sc);
        out.scales[j + 4] = uint8_t(m);
      } else {  // the top two bits go to the spare bits of bytes j-4 and j (see unpack_q4_k_scale)
        out.scales[j + 4] = uint8_t((sc & 0xF) | ((m & 0xF) << 4));
        out.scales[j - 4] |= uint8_t((sc >> 4) << 6);
        out.scales[j] |= uint8_t((m >> 4) << 6);
      }
      // Code the elements against the scale and min as stored.
      const ScaleMin stored{d * float(sc), dmin * float(m)};
      int q[32];
      assign_error(x + 32 * j, 32, 15, stored, q);
      uint8_t* qs = out.qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) qs[l] |= uint8_t(j % 2 == 0 ? q[l] : q[l] << 4);
    }
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float scales[16], amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_scale(x + 16 * j, 16);
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
