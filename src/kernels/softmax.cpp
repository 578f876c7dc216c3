// Highway implementation of kernels/softmax.h: compiled once per SIMD target
// (foreach_target.h), the public functions dispatch at run time.

#include <cfloat>
#include <cstring>
#include <limits>

#include "kernels/softmax.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/softmax.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes, so a tail fits one small buffer on every target.
using D16 = hn::CappedTag<float, 16>;
constexpr size_t kMaxL = 16;

LogitScan ScanLogits(const float* HWY_RESTRICT x, size_t n) {
  const D16 d;
  const size_t L = hn::Lanes(d);
  const auto inf = hn::Set(d, std::numeric_limits<float>::infinity());
  auto best = hn::Set(d, -std::numeric_limits<float>::infinity());
  size_t bad = 0;
  // x < +inf is false for NaN and +inf alone: the one comparison checks both.
  auto step = [&](hn::Vec<D16> v) HWY_ATTR {
    bad += hn::CountTrue(d, hn::Not(hn::Lt(v, inf)));
    best = hn::Max(best, v);
  };
  size_t i = 0;
  for (; i + L <= n; i += L) step(hn::LoadU(d, x + i));
  if (i < n) {
    alignas(64) float tail[kMaxL];
    for (size_t j = 0; j < L; ++j) tail[j] = -std::numeric_limits<float>::infinity();
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    step(hn::Load(d, tail));
  }
  return {hn::GetLane(hn::MaxOfLanes(d, best)), bad == 0};
}

void ExpWeights(const float* HWY_RESTRICT x, size_t n, float shift, float divisor, float* HWY_RESTRICT w) {
  const D16 d;
  const size_t L = hn::Lanes(d);
  // -inf - shift is -inf, outside Exp's range: clamped to -FLT_MAX, whose exp is 0.
  const auto s = hn::Set(d, shift), div = hn::Set(d, divisor), lowest = hn::Set(d, -FLT_MAX);
  auto weight = [&](hn::Vec<D16> v) HWY_ATTR { return hn::Exp(d, hn::Max(hn::Div(hn::Sub(v, s), div), lowest)); };
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(weight(hn::LoadU(d, x + i)), d, w + i);
  if (i == n) return;
  alignas(64) float tail[kMaxL] = {};
  std::memcpy(tail, x + i, (n - i) * sizeof(float));
  hn::Store(weight(hn::Load(d, tail)), d, tail);
  std::memcpy(w + i, tail, (n - i) * sizeof(float));
}

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(ScanLogits);
HWY_EXPORT(ExpWeights);

LogitScan scan_logits(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(ScanLogits)(x, n); }
void exp_weights(const float* x, size_t n, float shift, float divisor, float* w) {
  HWY_DYNAMIC_DISPATCH(ExpWeights)(x, n, shift, divisor, w);
}

}  // namespace pagoda
#endif  // HWY_ONCE
