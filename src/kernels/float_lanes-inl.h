// Per-target building blocks of the float kernels (float_matmul.cpp,
// attention.cpp, activations.cpp): the vector shape of the 16 partial sums
// (float_matmul.h), their fixed reduction tree, and the row readers that
// load F32, F16 and BF16 rows as F32.
//
// A Highway per-target header: each foreach_target pass of a TU that
// includes it after hwy/highway.h compiles it again for that target (the
// toggle guard below), inside pagoda::HWY_NAMESPACE.
#if defined(PAGODA_KERNELS_FLOAT_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PAGODA_KERNELS_FLOAT_LANES_INL_H_
#undef PAGODA_KERNELS_FLOAT_LANES_INL_H_
#else
#define PAGODA_KERNELS_FLOAT_LANES_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/float_matmul.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Every dot keeps its 16 partial sums in kV = 16 / lanes vectors (1 on
// AVX-512, 2 on AVX2, 4 on 128-bit), so the summation shape is the same on
// every target.
using DF = hn::CappedTag<float, kDotLanes>;
using V = hn::Vec<DF>;
constexpr size_t kL = hn::MaxLanes(DF());
constexpr size_t kV = kDotLanes / kL;  // vectors per 16 partial sums

// The fixed reduction tree of the 16 partial sums: in registers where the
// vectors are 8 or 16 lanes (the same additions in the same pairs), else
// through memory.
#if HWY_TARGET != HWY_SCALAR
// h: 8 lanes, lane j = s[j] + s[j + 8].
template <class D8>
HWY_INLINE float Reduce8(D8 d8, hn::Vec<D8> h) {
  const hn::Half<D8> d4;
  const auto q = hn::Add(hn::LowerHalf(d4, h), hn::UpperHalf(d4, h));  // + 4
  const auto p = hn::Add(q, hn::Shuffle1032(q));                       // + 2
  return hn::GetLane(hn::Add(p, hn::Shuffle2301(p)));                  // + 1
}
#endif

HWY_INLINE float ReduceLanes(const V* acc) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kL == 16) {
    const hn::Half<DF> d8;
    return Reduce8(d8, hn::Add(hn::LowerHalf(d8, acc[0]), hn::UpperHalf(d8, acc[0])));
  } else if constexpr (kL == 8) {
    return Reduce8(DF(), hn::Add(acc[0], acc[kV - 1]));
  }
#endif
  {
    alignas(64) float s[kDotLanes];
    for (size_t v = 0; v < kV; ++v) hn::Store(acc[v], DF(), s + v * kL);
    for (size_t w = kDotLanes / 2; w >= 1; w /= 2)
      for (size_t j = 0; j < w; ++j) s[j] += s[j + w];
    return s[0];
  }
}

// Row readers: load 16 elements starting at i (a multiple of 16) as F32, or
// the last n - i < 16 of them padded with zeros.
struct RowF32 {
  static constexpr size_t kStep = kDotLanes;
  const float* p;
  HWY_INLINE void Load(size_t i, V* out) const {
    for (size_t v = 0; v < kV; ++v) out[v] = hn::LoadU(DF(), p + i + v * kL);
  }
  HWY_INLINE void LoadTail(size_t i, size_t n, V* out) const {
    alignas(64) float buf[kDotLanes] = {};
    std::memcpy(buf, p + i, (n - i) * sizeof(float));
    for (size_t v = 0; v < kV; ++v) out[v] = hn::Load(DF(), buf + v * kL);
  }
};

// Rows are read as streams (see matmul); a software prefetch into L2 1 KiB
// on, once per cache line, keeps more reads in flight than the hardware
// prefetchers alone do.
// (KV rows, read several times from L1 within a block of positions, are
// read without: RowF16T<false>.)
template <bool kPrefetch>
struct RowF16T {
  static constexpr size_t kStep = kDotLanes;
  static constexpr size_t kPrefetchElems = 512;
  const uint16_t* p;
  HWY_INLINE void Load(size_t i, V* out) const {
    if (kPrefetch && i % 32 == 0) __builtin_prefetch(p + i + kPrefetchElems, 0, 2);
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
    // The emulated targets' half-to-float conversion turns inf and NaN into
    // finite numbers; decode as dequantize_row does.
    LoadTail(i, i + kDotLanes, out);
#else
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* h = reinterpret_cast<const hwy::float16_t*>(p + i);
    for (size_t v = 0; v < kV; ++v) out[v] = hn::PromoteTo(DF(), hn::LoadU(dh, h + v * kL));
#endif
  }
  HWY_INLINE void LoadTail(size_t i, size_t n, V* out) const {
    alignas(64) float buf[kDotLanes] = {};
    for (size_t j = i; j < n; ++j) buf[j - i] = f16_to_f32(p[j]);
    for (size_t v = 0; v < kV; ++v) out[v] = hn::Load(DF(), buf + v * kL);
  }
};

using RowF16 = RowF16T<true>;

struct RowBF16 {
  static constexpr size_t kStep = kDotLanes;
  const uint16_t* p;
  HWY_INLINE void Load(size_t i, V* out) const {
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> dh;
    for (size_t v = 0; v < kV; ++v)
      out[v] = hn::BitCast(DF(), hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(dh, p + i + v * kL))));
  }
  HWY_INLINE void LoadTail(size_t i, size_t n, V* out) const {
    alignas(64) float buf[kDotLanes] = {};
    for (size_t j = i; j < n; ++j) buf[j - i] = bf16_to_f32(p[j]);
    for (size_t v = 0; v < kV; ++v) out[v] = hn::Load(DF(), buf + v * kL);
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#endif  // PAGODA_KERNELS_FLOAT_LANES_INL_H_
