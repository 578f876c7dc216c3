// The row-panel kernels of each x86 vector width (kernels/x86/panel_kernels-inl.h,
// compiled once per target): AVX-512 VNNI (panel_dot_avx512.cpp) and AVX2
// (panel_dot_avx2.cpp, also used on AVX-512 CPUs without VNNI). Internal to
// kernels/panel_dot.cpp, which checks the arguments and picks one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"
#include "kernels/panels.h"

namespace pagoda {

struct PanelKernels {
  // Whether kernels exist for t (and were compiled: x86 with GCC or Clang).
  bool (*has)(TensorType t);
  // panel_dot and panel_dot_streams with these kernels (arguments checked by
  // the caller; t has kernels).
  void (*dot)(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
              size_t out_stride);
  void (*streams)(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
                  float* const* outs);
};

extern const PanelKernels kPanelKernelsAvx512, kPanelKernelsAvx2;

}  // namespace pagoda
