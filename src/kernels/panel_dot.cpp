// panel_dot and panel_dot_streams (kernels/panels.h): argument checks and the
// run-time choice between the AVX-512 VNNI kernels, the AVX2 ones and the
// scalar reference, by the SIMD target Highway's dispatch chose.
#include <algorithm>

#include "kernels/panels.h"
#include "kernels/quant_dot.h"
#include "kernels/x86/panel_kernels.h"
#include "quant/dot.h"
#include "util/error.h"

namespace pagoda {
namespace {

// The kernels for t on this CPU: AVX-512 VNNI's, else (AVX-512 without VNNI
// included) AVX2's; null: the scalar reference.
const PanelKernels* kernels_for(TensorType t) {
  if (simd_target_is_avx512_vnni() && kPanelKernelsAvx512.has(t)) return &kPanelKernelsAvx512;
  if (simd_target_is_x86_avx2() && kPanelKernelsAvx2.has(t)) return &kPanelKernelsAvx2;
  return nullptr;
}

}  // namespace

bool prefers_panels(TensorType t) { return has_panels(t) && kernels_for(t) != nullptr; }

void panel_dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
               size_t out_stride) {
  if (n_tokens < 1 || n_tokens > kPanelTokensMax || first < 0 || first + n_tokens > a.n_tokens)
    fail<InvalidArgument>("panel_dot: tokens {}..{} of {} (at most {} at a time)", first, first + n_tokens, a.n_tokens,
                          kPanelTokensMax);
  if (a.type != t)
    fail<InvalidArgument>("panel_dot: {} weights, activations prepared for {}", tensor_type_name(t),
                          tensor_type_name(a.type));
  if (const PanelKernels* ks = kernels_for(t)) return ks->dot(t, panel, a, first, n_tokens, out, out_stride);
  panel_dot_reference(t, panel, a, first, n_tokens, out, out_stride);
}

void panel_dot_streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
                       float* const* outs) {
  if (n < 1 || n > kPanelStreamsMax) fail<InvalidArgument>("panel_dot_streams: {} panels (1..{})", n, kPanelStreamsMax);
  if (a.type == t && token >= 0 && token < a.n_tokens)
    if (const PanelKernels* ks = kernels_for(t)) return ks->streams(t, panels, n, a, token, outs);
  for (int i = 0; i < n; ++i) panel_dot(t, panels[i], a, token, 1, outs[i], kPanelRows);  // checks, or the reference
}

int panel_decode_streams(TensorType t) {
  if (simd_target_is_avx512_vnni()) return t == TensorType::Q6_K ? 1 : 2;
  // The AVX2 kernels have 16 registers (figures: docs/performance.md,
  // appendix "Kernel tuning").
  return activation_type(t) == TensorType::Q8_K ? 1 : 2;
}

}  // namespace pagoda
