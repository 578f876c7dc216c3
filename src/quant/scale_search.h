// The scale searches the K-quant encoders share (kquants.cpp,
// kquants_low.cpp): a sub-block's (scale, min) for unsigned codes, or its
// signed scale for codes centred on zero, by a short alternating
// least-squares search. Not llama.cpp's search; the same formats.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace pagoda::scale_search {

// Round to nearest (ties to even) by the float-magic trick: far cheaper than
// lround, which the searches call for every element of every candidate.
// Inputs are clamped first; every caller clamps the code to a small range.
inline int nearest(float v) {
  const float f = std::clamp(v, -4.0e6f, 4.0e6f) + 12582912.0f;  // 1.5 * 2^23
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// x ~ scale * q - min with q in 0..nmax, scale >= 0 and min >= 0 (the formats
// store mins as unsigned, so a sub-block never gets a positive offset).
struct ScaleMin {
  float scale = 0, min = 0;
};

// Codes q (n <= 32 of them) of x against p, and the squared error.
float assign_error(const float* x, int n, int nmax, ScaleMin p, int* q);

// A sub-block's (scale, min) for codes 0..nmax; n <= 32.
ScaleMin fit_scale_min(const float* x, int n, int nmax);

// A sub-block's scale s for x ~ s * q with q in -half..half-1; negative s
// allowed (the stored scales are signed), so the element of largest
// magnitude can take the code -half, the end with the larger reach.
float fit_symmetric_scale(const float* x, int n, int half);

}  // namespace pagoda::scale_search
