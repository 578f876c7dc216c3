// SIMD Q8_K and Q8_0 encoders behind quantize_activations
// (kernels/quantize_activations.h). Each repeats its scalar quantize_row step by step,
// in lanes: the same NaN-ignoring absolute maximum, the same scale and
// inverse, the same rounding (Q8_K: clamp, then to nearest even by adding
// 1.5 * 2^23; Q8_0: std::lround, ties away from zero, and 0 where lround has
// no answer), so every byte matches.
#include "kernels/quantize_activations.h"

#include <cstdint>

#include "quant/blocks.h"
#include "quant/formats.h"
#include "quant/rows.h"
#include "util/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quantize_activations.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
void QuantizeQ8K(const float* x, BlockQ8_K* y, size_t n) { quantize_row_q8_k(x, y, n); }
void QuantizeQ8_0(const float* x, BlockQ8_0* y, size_t n) { quantize_row_q8_0(x, y, n); }
#else
// Decode quantizes every matrix's input, about 300K values a step for a 1B
// model: with std::lround per value that was 2 ms of a 30 ms Q8_0 step.
void QuantizeQ8_0(const float* x, BlockQ8_0* y, size_t n) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const size_t N = hn::Lanes(df);
  const auto half = hn::Set(df, 0.5f), one = hn::Set(df, 1.0f), limit = hn::Set(df, 2147483648.0f);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    auto vmax = hn::Zero(df);  // std::fmax(amax, |x|): NaNs never win
    for (size_t i = 0; i < size_t(kQK); i += N) {
      const auto a = hn::Abs(hn::LoadU(df, x + i));
      vmax = hn::IfThenElse(hn::Lt(vmax, a), a, vmax);
    }
    const float d = hn::GetLane(hn::MaxOfLanes(df, vmax)) / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    const auto vid = hn::Set(df, id);
    for (size_t i = 0; i < size_t(kQK); i += N) {
      const auto v = hn::Mul(hn::LoadU(df, x + i), vid);
      // lround: the integer part, one away from zero if the (exact) fraction
      // is at least a half; NaN and infinity give lround's LONG_MIN, low byte 0.
      // |v| <= amax / d stays within 127 (1 ulp over at most), so the
      // saturating demotion cuts nothing, as the scalar int8_t cast.
      const auto t = hn::Trunc(v);
      const auto up = hn::Ge(hn::Abs(hn::Sub(v, t)), half);
      const auto r = hn::Add(t, hn::IfThenElseZero(up, hn::CopySign(one, v)));
      const auto q = hn::ConvertTo(di, hn::IfThenElseZero(hn::Lt(hn::Abs(v), limit), r));
      hn::StoreU(hn::DemoteTo(d8, q), d8, y[b].qs + i);
    }
  }
}

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
HWY_EXPORT(QuantizeQ8_0);

void quantize_activations(TensorType xt, const float* x, void* out, size_t n) {
  if (xt == TensorType::Q8_K) {
    row_bytes(xt, n);  // validates n
    return HWY_DYNAMIC_DISPATCH(QuantizeQ8K)(x, static_cast<BlockQ8_K*>(out), n);
  }
  if (xt == TensorType::Q8_0) {
    row_bytes(xt, n);
    return HWY_DYNAMIC_DISPATCH(QuantizeQ8_0)(x, static_cast<BlockQ8_0*>(out), n);
  }
  quantize_row(xt, x, out, n);
}

}  // namespace pagoda
#endif  // HWY_ONCE
