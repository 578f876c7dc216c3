// Row-panel kernels for AVX2 (quant/panels.h), used where the SIMD target is
// AVX2 or an AVX-512 one without VNNI, for every panel format. Each 64-byte
// group of a panel is two 256-bit halves, rows 0-7 and 8-15; vpmaddubsw and
// vpmaddwd take vpdpbusd's place (codes and pair sums sized to fit int16). Internal to
// quant/panel_dot_avx512.cpp, which dispatches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"
#include "quant/panels.h"

namespace pagoda::panels_avx2 {

// Whether AVX2 panel kernels exist for t (and were compiled: x86).
bool has_kernels(TensorType t);
// panel_dot and panel_dot_streams with these kernels (arguments checked by the caller).
void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
         size_t out_stride);
void streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
             float* const* outs);

}  // namespace pagoda::panels_avx2
