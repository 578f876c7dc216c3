// SIMD Q8_K encoder behind quantize_activations (quant/quantize_simd.h). It
// repeats the scalar quantize_row_q8_k step by step, in lanes: the same
// NaN-ignoring absolute maximum, the same scale and inverse, the same clamp
// and round-to-nearest-even by adding 1.5 * 2^23, so every byte matches.
#include "quant/quantize_simd.h"

#include <cstdint>

#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/quantize_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
void QuantizeQ8K(const float* x, BlockQ8_K* y, size_t n) { quantize_row_q8_k(x, y, n); }
#else
void QuantizeQ8K(const float* x, BlockQ8_K* y, size_t n) {
  const hn::CappedTag<float, 16> df;  // at most one 16-element group per vector
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const size_t N = hn::Lanes(df);
  const auto magic = hn::Set(df, 12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const auto lo = hn::Set(df, -4.0e6f), hi = hn::Set(df, 4.0e6f);
  for (size_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    // std::max(amax, |x|) keeps amax unless amax < |x|: NaNs never win.
    auto vmax = hn::Zero(df);
    for (size_t i = 0; i < size_t(kQKK); i += N) {
      const auto a = hn::Abs(hn::LoadU(df, x + i));
      vmax = hn::IfThenElse(hn::Lt(vmax, a), a, vmax);
    }
    alignas(64) float lanes[16];
    hn::Store(vmax, df, lanes);
    float amax = 0;
    for (size_t i = 0; i < N; ++i) amax = amax < lanes[i] ? lanes[i] : amax;
    const float d = amax / 127.0f;
    const float id = d > 0 ? 1.0f / d : 0.0f;
    y[b].d = d;
    const auto vid = hn::Set(df, id);
    for (size_t g = 0; g < size_t(kQKK) / 16; ++g) {
      auto sum = hn::Zero(di);
      for (size_t i = 16 * g; i < 16 * g + 16; i += N) {
        const auto v = hn::Mul(hn::LoadU(df, x + i), vid);
        // std::clamp(v, lo, hi) (NaN passes through), then the rounding add.
        const auto c = hn::IfThenElse(hn::Lt(v, lo), lo, hn::IfThenElse(hn::Lt(hi, v), hi, v));
        const auto bits = hn::BitCast(di, hn::Add(c, magic));
        auto q = hn::Sub(hn::And(bits, hn::Set(di, 0x007fffff)), hn::Set(di, 0x00400000));
        q = hn::Min(hn::Max(q, hn::Set(di, -127)), hn::Set(di, 127));
        hn::StoreU(hn::DemoteTo(d8, q), d8, y[b].qs + i);
        sum = hn::Add(sum, q);
      }
      y[b].bsums[g] = int16_t(hn::GetLane(hn::SumOfLanes(di, sum)));
    }
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(QuantizeQ8K);

void quantize_activations(TensorType xt, const float* x, void* out, size_t n) {
  if (xt == TensorType::Q8_K) {
    row_bytes(xt, n);  // validates n
    return HWY_DYNAMIC_DISPATCH(QuantizeQ8K)(x, static_cast<BlockQ8_K*>(out), n);
  }
  quantize_row(xt, x, out, n);
}

}  // namespace pagoda
#endif  // HWY_ONCE
