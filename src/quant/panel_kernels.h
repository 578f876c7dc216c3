// The row-panel kernels of each x86 vector width (quant/panel_kernels-inl.h,
// compiled once per target): AVX-512 VNNI (panel_dot_avx512.cpp) and AVX2
// (panel_dot_avx2.cpp, also used on AVX-512 CPUs without VNNI). Internal to
// quant/panel_dot.cpp, which checks the arguments and picks one. In each:
//   has_kernels(t)  kernels exist for t (and were compiled: x86, GCC or Clang);
//   dot, streams    panel_dot and panel_dot_streams with them (t has kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"
#include "quant/panels.h"

namespace pagoda::panels_avx512 {
bool has_kernels(TensorType t);
void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
         size_t out_stride);
void streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
             float* const* outs);
}  // namespace pagoda::panels_avx512

namespace pagoda::panels_avx2 {
bool has_kernels(TensorType t);
void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
         size_t out_stride);
void streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
             float* const* outs);
}  // namespace pagoda::panels_avx2
