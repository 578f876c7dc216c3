// Highway implementation of kernels/attention.h (decode attention over paged
// K/V rows, softmax): compiled once per SIMD target (foreach_target.h), the
// public functions dispatch at run time. The lane shape, the reduction and
// the row readers: float_lanes-inl.h.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention.h"
#include "util/error.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "kernels/float_lanes-inl.h"
#include "kernels/x86/highway_ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Decode attention over paged K/V rows (attend_scores, attend_values).
// Both keep the bits of the per-row kernels they replace (one dot_f32 per
// score, one axpy per row) but make one call per KV head instead of one per
// block and head, keep a block's K rows in L1 for every query head, and
// reduce 16 scores' partial sums together.

// Row p of a paged view.
template <class Elem>
HWY_INLINE const Elem* PagedRow(const PagedRows& r, size_t p) {
  return static_cast<const Elem*>(r.blocks[p / r.block_size]) + (p % r.block_size) * r.ld;
}

// Zeros standing in for the missing rows of a last, partial group of 16
// positions (their scores are computed and dropped).
alignas(64) constexpr float kZeroF32[kAttendMaxHeadDim] = {};
alignas(64) constexpr uint16_t kZeroF16[kAttendMaxHeadDim] = {};

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
// 16 dots' partial sums (a vector each) to their 16 sums in one vector, by
// the same additions of the same pairs as ReduceLanes (lane j + 8, + 4, + 2,
// + 1), so the same bits. The sums come out permuted: for position L's
// score in lane L, slot s holds position kPosOfSlot[s]'s dot.
constexpr size_t kPosOfSlot[16] = {0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15};

HWY_INLINE V SumsOf16(const V (&a)[16]) {
  const DF d;
  V b[8], c[4], e[2];
  for (int i = 0; i < 8; ++i)  // slots 2i, 2i + 1: lanes j + (j + 8), in halves
    b[i] = hn::Add(hn::ConcatLowerLower(d, a[2 * i + 1], a[2 * i]), hn::ConcatUpperUpper(d, a[2 * i + 1], a[2 * i]));
  for (int k = 0; k < 4; ++k)  // + 4: 128-bit blocks 0 + 1 and 2 + 3 of two vectors
    c[k] = hn::Add(EvenBlocks(b[2 * k], b[2 * k + 1]), OddBlocks(b[2 * k], b[2 * k + 1]));
  for (int m = 0; m < 2; ++m)  // + 2, within blocks
    e[m] = hn::Add(hn::InterleaveLower(d, c[2 * m], c[2 * m + 1]), hn::InterleaveUpper(d, c[2 * m], c[2 * m + 1]));
  return hn::Add(hn::InterleaveLower(d, e[0], e[1]), hn::InterleaveUpper(d, e[0], e[1]));  // + 1
}
#endif

template <class Row, class Elem>
void AttendScoresRows(const float* q, size_t n_q, size_t hd, const PagedRows& k, size_t n, float* scores, size_t ld_s) {
  const Elem* zero;
  if constexpr (std::is_same_v<Elem, float>)
    zero = kZeroF32;
  else
    zero = kZeroF16;
  for (size_t p0 = 0; p0 < n; p0 += 16) {
    const size_t m = std::min<size_t>(16, n - p0);
    const Elem* rows[16];
    size_t b = p0 / k.block_size, slot = p0 % k.block_size;  // one division per 16 positions
    for (size_t i = 0; i < 16; ++i) {
      if (i >= m) {
        rows[i] = zero;
        continue;
      }
      rows[i] = static_cast<const Elem*>(k.blocks[b]) + slot * k.ld;
      if (++slot == k.block_size) slot = 0, ++b;
    }
    for (size_t h = 0; h < n_q; ++h) {
      const float* qh = q + h * hd;
      float* out = scores + h * ld_s + p0;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      const DF d;
      V acc[16];
      for (V& a : acc) a = hn::Zero(d);
      for (size_t i = 0; i < hd; i += kDotLanes) {
        const V qv = hn::LoadU(d, qh + i);
        for (size_t s = 0; s < 16; ++s) {
          V kv;
          Row{rows[kPosOfSlot[s]]}.Load(i, &kv);
          acc[s] = hn::MulAdd(kv, qv, acc[s]);
        }
      }
      hn::BlendedStore(SumsOf16(acc), hn::FirstN(d, m), d, out);
#else
      for (size_t p = 0; p < m; ++p) {
        V acc[kV];
        for (V& a : acc) a = hn::Zero(DF());
        for (size_t i = 0; i < hd; i += kDotLanes) {
          V kv[kV], qv[kV];
          Row{rows[p]}.Load(i, kv);
          RowF32{qh}.Load(i, qv);
          for (size_t v = 0; v < kV; ++v) acc[v] = hn::MulAdd(kv[v], qv[v], acc[v]);
        }
        out[p] = ReduceLanes(acc);
      }
#endif
    }
  }
}

// kH heads of kC chunks of 16 elements each, their sums in registers over
// every position.
template <size_t kH, size_t kC, class Row, class Elem>
HWY_INLINE void ValuesPass(const float* w, size_t ld_w, const PagedRows& v, size_t n, float* out, size_t hd) {
  const DF d;
  V acc[kH][kC * kV];
  for (auto& a : acc)
    for (V& x : a) x = hn::Zero(d);
  for (size_t p0 = 0; p0 < n; p0 += v.block_size) {
    const Elem* row = PagedRow<Elem>(v, p0);
    const size_t m = std::min(v.block_size, n - p0);
    for (size_t i = 0; i < m; ++i, row += v.ld) {
      V x[kC * kV];
      for (size_t c = 0; c < kC; ++c) Row{row}.Load(c * kDotLanes, x + c * kV);
      for (size_t h = 0; h < kH; ++h) {
        const V a = hn::Set(d, w[h * ld_w + p0 + i]);
        for (size_t j = 0; j < kC * kV; ++j) acc[h][j] = hn::MulAdd(a, x[j], acc[h][j]);
      }
    }
  }
  for (size_t h = 0; h < kH; ++h)
    for (size_t j = 0; j < kC * kV; ++j) hn::StoreU(acc[h][j], d, out + h * hd + j * kL);
}

// Heads as many at a time as leave registers for a row (16 accumulators of
// 32 registers, 8 of 16), one at a time for the rest.
template <size_t kC, class Row, class Elem>
void AttendValuesHeads(const float* w, size_t ld_w, size_t n_q, const PagedRows& v, size_t n, float* out, size_t hd) {
  constexpr size_t kAccMax = kL == 16 ? 16 : 8;
  constexpr size_t kH = std::max<size_t>(1, std::min<size_t>(4, kAccMax / (kC * kV)));
  size_t h = 0;
  for (; h + kH <= n_q; h += kH) ValuesPass<kH, kC, Row, Elem>(w + h * ld_w, ld_w, v, n, out + h * hd, hd);
  for (; h < n_q; ++h) ValuesPass<1, kC, Row, Elem>(w + h * ld_w, ld_w, v, n, out + h * hd, hd);
}

template <class Row, class Elem>
void AttendValuesRows(const float* w, size_t ld_w, size_t n_q, const PagedRows& v, size_t n, float* out, size_t hd) {
  switch (hd / kDotLanes) {
    case 1: return AttendValuesHeads<1, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 2: return AttendValuesHeads<2, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 3: return AttendValuesHeads<3, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 4: return AttendValuesHeads<4, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 5: return AttendValuesHeads<5, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 6: return AttendValuesHeads<6, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 7: return AttendValuesHeads<7, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    case 8: return AttendValuesHeads<8, Row, Elem>(w, ld_w, n_q, v, n, out, hd);
    default: return;  // attend_values checked hd
  }
}

void AttendScores(const float* q, size_t n_q, size_t hd, const PagedRows& k, size_t n, float* scores, size_t ld_s) {
  if (k.type == TensorType::F16) return AttendScoresRows<RowF16T<false>, uint16_t>(q, n_q, hd, k, n, scores, ld_s);
  AttendScoresRows<RowF32, float>(q, n_q, hd, k, n, scores, ld_s);
}

void AttendValues(const float* w, size_t ld_w, size_t n_q, const PagedRows& v, size_t n, float* out, size_t hd) {
  if (v.type == TensorType::F16) return AttendValuesRows<RowF16T<false>, uint16_t>(w, ld_w, n_q, v, n, out, hd);
  AttendValuesRows<RowF32, float>(w, ld_w, n_q, v, n, out, hd);
}

// x[i] = exp(scale x[i] - max) / sum over i: three passes over x (in L1),
// Highway's vector exp, and the sum as 16 partial sums reduced as in a dot
// (so AVX2 and AVX-512 give the same bits).
void SoftmaxScaled(float* x, size_t n, float scale, float sink) {
  const DF d;
  const V vscale = hn::Set(d, scale);
  V vmax = hn::Set(d, -HUGE_VALF);
  size_t i = 0;
  for (; i + kL <= n; i += kL) {
    const V v = hn::Mul(hn::LoadU(d, x + i), vscale);
    hn::StoreU(v, d, x + i);
    vmax = hn::Max(vmax, v);
  }
  float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) max = std::max(max, x[i] *= scale);
  const bool has_sink = std::isfinite(sink);
  if (has_sink) max = std::max(max, sink);
  const V vm = hn::Set(d, max);
  V acc[kV];
  for (size_t v = 0; v < kV; ++v) acc[v] = hn::Zero(d);
  alignas(64) float buf[kDotLanes];
  for (i = 0; i < n; i += kDotLanes) {
    const size_t m = std::min(kDotLanes, n - i);
    float* p = m == kDotLanes ? x + i : buf;
    if (m < kDotLanes) {
      std::fill_n(buf, kDotLanes, max);
      std::memcpy(buf, x + i, m * sizeof(float));
    }
    for (size_t v = 0; v < kV; ++v) {
      const size_t valid = m > v * kL ? m - v * kL : 0;  // lanes past n add zeros
      const V e = hn::IfThenElseZero(hn::FirstN(d, valid), hn::Exp(d, hn::Sub(hn::LoadU(d, p + v * kL), vm)));
      hn::StoreU(e, d, p + v * kL);
      acc[v] = hn::Add(acc[v], e);
    }
    if (m < kDotLanes) std::memcpy(x + i, buf, m * sizeof(float));
  }
  const V inv = hn::Set(d, 1.0f / (has_sink ? ReduceLanes(acc) + std::exp(sink - max) : ReduceLanes(acc)));
  for (i = 0; i + kL <= n; i += kL) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), inv), d, x + i);
  for (; i < n; ++i) x[i] *= hn::GetLane(inv);
}

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(SoftmaxScaled);
HWY_EXPORT(AttendScores);
HWY_EXPORT(AttendValues);

void softmax_scaled(float* x, size_t n, float scale, float sink) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(SoftmaxScaled)(x, n, scale, sink);
}

namespace {
void check_attend(const PagedRows& r, size_t hd) {
  if (!attend_kernels_take(hd)) fail<InvalidArgument>("attention kernels: head size {}", hd);
  if (r.type != TensorType::F32 && r.type != TensorType::F16)
    fail<InvalidArgument>("attention kernels: {} rows", tensor_type_name(r.type));
}
}  // namespace

bool attend_kernels_take(size_t hd) { return hd > 0 && hd % kDotLanes == 0 && hd <= kAttendMaxHeadDim; }

void attend_scores(const float* q, size_t n_q, size_t hd, const PagedRows& k, size_t n, float* scores, size_t ld_s) {
  check_attend(k, hd);
  HWY_DYNAMIC_DISPATCH(AttendScores)(q, n_q, hd, k, n, scores, ld_s);
}

void attend_values(const float* w, size_t ld_w, size_t n_q, const PagedRows& v, size_t n, float* out, size_t hd) {
  check_attend(v, hd);
  HWY_DYNAMIC_DISPATCH(AttendValues)(w, ld_w, n_q, v, n, out, hd);
}

}  // namespace pagoda
#endif  // HWY_ONCE
