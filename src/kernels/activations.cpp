// Highway implementation of kernels/activations.h: compiled once per SIMD
// target (foreach_target.h), the public function dispatches at run time.

#include <cstring>

#include "kernels/activations.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/activations.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "kernels/float_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// gate[i] = silu(gate[i]) * up[i], as the scalar gate / (1 + exp(-gate)) *
// up with Highway's vector exp. Its argument is capped at 100 (the exp is
// valid up to 104): exp(100) overflows a float to infinity, as std::exp's
// would, and the gate's silu is -0.
void SwiGlu(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, size_t n) {
  const DF d;
  const V one = hn::Set(d, 1.0f), cap = hn::Set(d, 100.0f);
  auto silu_times = [&](V g, V u)
                        HWY_ATTR { return hn::Mul(hn::Div(g, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(g), cap)))), u); };
  size_t i = 0;
  for (; i + kL <= n; i += kL) hn::StoreU(silu_times(hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, gate + i);
  if (i == n) return;
  alignas(64) float g[kL] = {}, u[kL] = {};
  std::memcpy(g, gate + i, (n - i) * sizeof(float));
  std::memcpy(u, up + i, (n - i) * sizeof(float));
  hn::Store(silu_times(hn::Load(d, g), hn::Load(d, u)), d, g);
  std::memcpy(gate + i, g, (n - i) * sizeof(float));
}

// The same loop shape for GeGLU. tanh saturates on its own, so no cap is needed.
void GeGluTanh(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, size_t n) {
  const DF d;
  const V half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), k = hn::Set(d, 0.7978845608028654f),
          c = hn::Set(d, 0.044715f);
  auto gelu_times = [&](V x, V u) HWY_ATTR {
    const V inner = hn::Mul(k, hn::MulAdd(hn::Mul(c, hn::Mul(x, x)), x, x));
    return hn::Mul(hn::Mul(hn::Mul(half, x), hn::Add(one, hn::Tanh(d, inner))), u);
  };
  size_t i = 0;
  for (; i + kL <= n; i += kL) hn::StoreU(gelu_times(hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, gate + i);
  if (i == n) return;
  alignas(64) float g[kL] = {}, u[kL] = {};
  std::memcpy(g, gate + i, (n - i) * sizeof(float));
  std::memcpy(u, up + i, (n - i) * sizeof(float));
  hn::Store(gelu_times(hn::Load(d, g), hn::Load(d, u)), d, g);
  std::memcpy(gate + i, g, (n - i) * sizeof(float));
}

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(SwiGlu);
HWY_EXPORT(GeGluTanh);

void swiglu_simd(float* gate, const float* up, size_t n) { HWY_DYNAMIC_DISPATCH(SwiGlu)(gate, up, n); }
void geglu_tanh_simd(float* gate, const float* up, size_t n) { HWY_DYNAMIC_DISPATCH(GeGluTanh)(gate, up, n); }

}  // namespace pagoda
#endif  // HWY_ONCE
