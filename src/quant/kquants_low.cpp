// The low-bit K-quants Q2_K and Q3_K: 16 sub-blocks of 16 elements, their
// scales (and Q2_K's mins) searched per sub-block (quant/scale_search.h),
// then coded against one F16 super-block scale. The decoders compute ggml's
// float expressions, so they equal its to_float bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/formats.h"
#include "quant/scale_search.h"
#include "util/half.h"

namespace pagoda {

void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n) {
  using namespace scale_search;
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    ScaleMin sub[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      sub[j] = fit_scale_min(x + 16 * j, 16, 3);
      max_scale = std::max(max_scale, sub[j].scale);
      max_min = std::max(max_min, sub[j].min);
    }
    BlockQ2_K& out = y[b];
    out.d = f32_to_f16(max_scale / 15.0f);
    out.dmin = f32_to_f16(max_min / 15.0f);
    const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
    std::memset(out.qs, 0, sizeof out.qs);
    for (int j = 0; j < 16; ++j) {
      const int sc = d > 0 ? std::clamp(nearest(sub[j].scale / d), 0, 15) : 0;
      const int m = dmin > 0 ? std::clamp(nearest(sub[j].min / dmin), 0, 15) : 0;
      out.scales[j] = uint8_t(sc | (m << 4));
      int q[16];
      assign_error(x + 16 * j, 16, 3, ScaleMin{d * float(sc), dmin * float(m)}, q);
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * j + l, r = i % 128;  // see q2_k_code
        out.qs[32 * (i / 128) + r % 32] |= uint8_t(q[l] << (2 * (r / 32)));
      }
    }
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n) {
  using namespace scale_search;
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float scales[16], amax = 0, max = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_scale(x + 16 * j, 16, 4);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max = scales[j];
      }
    }
    BlockQ3_K& out = y[b];
    // The scale of largest magnitude takes -32, the end with the larger reach.
    out.d = f32_to_f16(-max / 32.0f);
    const float d = f16_to_f32(out.d);
    std::memset(out.hmask, 0, sizeof out.hmask);
    std::memset(out.qs, 0, sizeof out.qs);
    std::memset(out.scales, 0, sizeof out.scales);
    for (int j = 0; j < 16; ++j) {
      const int sc = d != 0 ? std::clamp(nearest(scales[j] / d), -32, 31) : 0;
      const int v = sc + 32;  // see q3_k_scale
      out.scales[j % 8] |= uint8_t((v & 0xF) << (4 * (j / 8)));
      out.scales[8 + j % 4] |= uint8_t((v >> 4) << (2 * (j / 4)));
      const float s = d * float(sc);
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * j + l, r = i % 128;
        const int u = (s != 0 ? std::clamp(nearest(x[i] / s), -4, 3) : 0) + 4;  // 0..7: value + 4
        out.qs[32 * (i / 128) + r % 32] |= uint8_t((u & 3) << (2 * (r / 32)));
        out.hmask[i % 32] |= uint8_t((u >> 2) << (i / 32));
      }
    }
  }
}

// As ggml's to_float: dl = d * sc, ml = dmin * m, then dl * q - ml.
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * float(x[b].scales[j] & 0xF), ml = dmin * float(x[b].scales[j] >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * float(q2_k_code(x[b], 16 * j + l)) - ml;
    }
  }
}

// As ggml's to_float: dl = d * (sc - 32), then dl * q.
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * float(q3_k_scale(x[b].scales, j));
      for (int l = 0; l < 16; ++l) *y++ = dl * float(q3_k_code(x[b], 16 * j + l));
    }
  }
}

}  // namespace pagoda
