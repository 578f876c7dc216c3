// MXFP4 (the OCP microscaling 4-bit float; gpt-oss's expert weights): 32
// elements share a power-of-two scale, an E8M0 exponent byte, and each is an
// E2M1 float stored as an index into kMXFP4Values. The encoder and decoder
// compute ggml's reference expressions, so a block Pagoda writes is the one
// ggml's quantizer writes and a decoded value is its to_float's, bit for bit.
#include <algorithm>
#include <cmath>

#include "quant/formats.h"

namespace pagoda {
namespace {

// ggml's exponent: floor(log2 amax) - 2 + 127, which puts the largest
// element between 8 and 16 times half the scale (past 12, the table's
// largest value, elements clip). The same libm log2f as ggml, so the same floor at the edges
// of a binade; clamped to a byte, where ggml's cast of a tiny or infinite
// amax is undefined. All zero (or NaN): 0, as ggml.
uint8_t mxfp4_exponent(float amax) {
  if (!(amax > 0)) return 0;
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  return uint8_t(std::clamp(e, 0.0f, 255.0f));
}

// The index whose value times d is nearest v, the first on a tie (ggml's
// search, with its float rounding: the bytes must be ggml's). NaN gives 0.
uint8_t nearest_mxfp4_index(float v, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(float(kMXFP4Values[0]) * d - v);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(float(kMXFP4Values[i]) * d - v);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void quantize_row_mxfp4(const float* x, BlockMXFP4* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    y[i].e = mxfp4_exponent(amax);
    const float d = mxfp4_scale(y[i].e);
    for (int j = 0; j < kQK / 2; ++j)
      y[i].qs[j] = uint8_t(nearest_mxfp4_index(x[j], d) | nearest_mxfp4_index(x[j + kQK / 2], d) << 4);
  }
}

// As ggml's to_float: value * d (exact: a small integer times a power of two).
void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, size_t n) {
  for (size_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = mxfp4_scale(x[i].e);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = float(kMXFP4Values[x[i].qs[j] & 0xF]) * d;
      y[j + kQK / 2] = float(kMXFP4Values[x[i].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace pagoda
