// Highway implementation of kernels/delta_net.h: compiled once per SIMD
// target (foreach_target.h), the public function dispatches at run time.

#include "kernels/delta_net.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/delta_net.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Row by row: decay it and dot it with k, then the delta-rule update and the
// dot with q; the row (dk floats, 512 bytes for Qwen3.5) is back from L1 for
// the second pass, so S crosses the memory bus once each way per token.
// s_in may be s_out: each element is read before it is written.
void DeltaNetStep(const float* s_in, float* s_out, size_t dv, size_t dk, const float* HWY_RESTRICT q,
                  const float* HWY_RESTRICT k, const float* HWY_RESTRICT v, float decay, float beta, float scale,
                  float* HWY_RESTRICT o) {
  const hn::ScalableTag<float> d;
  const size_t L = hn::Lanes(d);
  const auto vdecay = hn::Set(d, decay);
  for (size_t j = 0; j < dv; ++j) {
    const float* in = s_in ? s_in + j * dk : nullptr;
    float* row = s_out + j * dk;
    auto sk = hn::Zero(d);
    size_t i = 0;
    for (; i + L <= dk; i += L) {
      const auto r = in ? hn::Mul(hn::LoadU(d, in + i), vdecay) : hn::Zero(d);
      hn::StoreU(r, d, row + i);
      sk = hn::MulAdd(r, hn::LoadU(d, k + i), sk);
    }
    float sk_tail = 0;
    for (; i < dk; ++i) {
      row[i] = in ? in[i] * decay : 0.0f;
      sk_tail += row[i] * k[i];
    }
    const float delta = beta * (v[j] - (hn::GetLane(hn::SumOfLanes(d, sk)) + sk_tail));
    const auto vdelta = hn::Set(d, delta);
    auto sq = hn::Zero(d);
    i = 0;
    for (; i + L <= dk; i += L) {
      const auto r = hn::MulAdd(vdelta, hn::LoadU(d, k + i), hn::LoadU(d, row + i));
      hn::StoreU(r, d, row + i);
      sq = hn::MulAdd(r, hn::LoadU(d, q + i), sq);
    }
    float sq_tail = 0;
    for (; i < dk; ++i) {
      row[i] += delta * k[i];
      sq_tail += row[i] * q[i];
    }
    o[j] = scale * (hn::GetLane(hn::SumOfLanes(d, sq)) + sq_tail);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(DeltaNetStep);

void delta_net_step(const float* s_in, float* s_out, size_t dv, size_t dk, const float* q, const float* k,
                    const float* v, float decay, float beta, float scale, float* o) {
  HWY_DYNAMIC_DISPATCH(DeltaNetStep)(s_in, s_out, dv, dk, q, k, v, decay, beta, scale, o);
}

}  // namespace pagoda
#endif  // HWY_ONCE
