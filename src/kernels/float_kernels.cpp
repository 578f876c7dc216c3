// Highway implementation of kernels/float_kernels.h: this file is compiled once per
// SIMD target (foreach_target.h) and the public functions dispatch at run time.
//
// Every dot keeps its 16 partial sums in kV = 16 / lanes vectors (1 on
// AVX-512, 2 on AVX2, 4 on 128-bit), so the summation shape is the same on
// every target. The tile kernel computes a block of kR rows x kT tokens at a
// time: per step of 16 elements it loads kR row chunks and kT token chunks
// once and issues kR * kT FMAs, each output still owning its own
// accumulators, so blocking never changes a result.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/float_kernels.h"
#include "quant/blocks.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/half.h"

// Once, not per target: every F16 value as F32, so a Q8_0 block's scale
// costs one table load instead of several vector instructions (the table is
// 256 KiB, but a model's scales use a few thousand of its entries).
#ifndef PAGODA_SIMD_FLOAT_ONCE
#define PAGODA_SIMD_FLOAT_ONCE
namespace pagoda {
namespace {
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(uint16_t(h));
    return t;
  }();
  return table.data();
}
}  // namespace
}  // namespace pagoda
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/float_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::CappedTag<float, kDotLanes>;
using V = hn::Vec<DF>;
constexpr size_t kL = hn::MaxLanes(DF());
constexpr size_t kV = kDotLanes / kL;  // vectors per 16 partial sums
// Block shape: accumulators kR * kT * kV plus kR * kV row vectors must fit the
// register file (32 vectors on AVX-512, 16 on AVX2).
constexpr int kR = kV == 1 ? 4 : 2;
constexpr int kT = kV == 1 ? 6 : kV == 2 ? 3 : 1;
constexpr int kR1 = kV == 1 ? 8 : 2;  // rows of a block with a single token

// The fixed reduction tree of the 16 partial sums: in registers where the
// vectors are 8 or 16 lanes (the same additions in the same pairs), else
// through memory.
#if HWY_TARGET != HWY_SCALAR
// h: 8 lanes, lane j = s[j] + s[j + 8].
template <class D8>
HWY_INLINE float Reduce8(D8 d8, hn::Vec<D8> h) {
  const hn::Half<D8> d4;
  const auto q = hn::Add(hn::LowerHalf(d4, h), hn::UpperHalf(d4, h));  // + 4
  const auto p = hn::Add(q, hn::Shuffle1032(q));                        // + 2
  return hn::GetLane(hn::Add(p, hn::Shuffle2301(p)));                   // + 1
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

// Q8_0 (embedding lookups): a whole 32-element block per load, so its scale
// is decoded once; value = d * q as in dequantize_row_q8_0 (exact in F32:
// 11 x 8 bits). Rows are whole blocks, so there is no tail.
struct RowQ8_0 {
  static constexpr size_t kStep = kQK;
  static constexpr size_t kPrefetchBlocks = 24;
  const BlockQ8_0* p;
  const float* f16 = f16_table();
  HWY_INLINE void Load(size_t i, V* out) const {
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const BlockQ8_0& b = p[i / kQK];
    __builtin_prefetch(&b + kPrefetchBlocks, 0, 2);  // into L2, see RowF16
    const V d = hn::Set(DF(), f16[b.d]);
    for (size_t v = 0; v < kQK / kL; ++v)
      out[v] = hn::Mul(d, hn::ConvertTo(DF(), hn::PromoteTo(di, hn::LoadU(d8, b.qs + v * kL))));
  }
  HWY_INLINE void LoadTail(size_t, size_t, V* out) const {
    for (size_t v = 0; v < kQK / kL; ++v) out[v] = hn::Zero(DF());
  }
};

// acc[r][t] += w[r] * x[t] for one step of 16 elements (w[r] + s * kV).
template <int R, int T, size_t W>
HWY_INLINE void Step(V (&acc)[R][T][kV], const V (&w)[R][W], size_t s, const float* x, size_t ldx, size_t i) {
  for (int t = 0; t < T; ++t) {
    V xv[kV];
    RowF32{x + size_t(t) * ldx}.Load(i, xv);
    for (int r = 0; r < R; ++r)
      for (size_t v = 0; v < kV; ++v) acc[r][t][v] = hn::MulAdd(w[r][s * kV + v], xv[v], acc[r][t][v]);
  }
}

// The same for the last n - i < 16 elements, zero-padded.
template <int R, int T, class Row>
HWY_NOINLINE void TailStep(V (&acc)[R][T][kV], const Row* rows, const float* x, size_t ldx, size_t i, size_t n) {
  V w[R][Row::kStep / kDotLanes * kV];
  for (int r = 0; r < R; ++r) rows[r].LoadTail(i, n, w[r]);
  for (int t = 0; t < T; ++t) {
    V xv[kV];
    RowF32{x + size_t(t) * ldx}.LoadTail(i, n, xv);
    for (int r = 0; r < R; ++r)
      for (size_t v = 0; v < kV; ++v) acc[r][t][v] = hn::MulAdd(w[r][v], xv[v], acc[r][t][v]);
  }
}

// Elements [i0, i1) of one block of outputs y[t * ldy + r], r < R, t < T.
// Between chunks the accumulators wait in `saved` (R * T * 16 floats), which
// is exact; the last chunk (i1 == n) adds the tail and reduces into y.
template <int R, int T, class Row>
HWY_NOINLINE void Block(const Row* rows, const float* x, size_t ldx, size_t i0, size_t i1, size_t n, float* saved,
                        float* y, size_t ldy) {
  V acc[R][T][kV];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      for (size_t v = 0; v < kV; ++v)
        acc[r][t][v] = i0 == 0 ? hn::Zero(DF()) : hn::LoadU(DF(), saved + ((r * T + t) * kV + v) * kL);
  // Rows load Row::kStep elements (16 or a 32-element block) at a time;
  // chunk edges (kChunk) are multiples of it and so is n for block types.
  constexpr size_t kSub = Row::kStep / kDotLanes;
  const size_t n_full = n / Row::kStep * Row::kStep;
  for (size_t i = i0; i < std::min(i1, n_full); i += Row::kStep) {
    V w[R][kSub * kV];
    for (int r = 0; r < R; ++r) rows[r].Load(i, w[r]);
    for (size_t s = 0; s < kSub; ++s) Step<R, T>(acc, w, s, x, ldx, i + s * kDotLanes);
  }
  if (i1 < n) {
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t)
        for (size_t v = 0; v < kV; ++v) hn::StoreU(acc[r][t][v], DF(), saved + ((r * T + t) * kV + v) * kL);
    return;
  }
  if (n_full < n) TailStep<R, T>(acc, rows, x, ldx, n_full, n);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = ReduceLanes(acc[r][t]);
}

// Blocks of R rows against nt <= kT tokens.
template <int R, class Row>
HWY_INLINE void RowBlock(const Row* rows, const float* x, size_t ldx, size_t nt, size_t i0, size_t i1, size_t n,
                         float* saved, float* y, size_t ldy) {
  switch (nt) {
    case 1: return Block<R, 1>(rows, x, ldx, i0, i1, n, saved, y, ldy);
    case 2: if constexpr (kT >= 2) Block<R, 2>(rows, x, ldx, i0, i1, n, saved, y, ldy); return;
    case 3: if constexpr (kT >= 3) Block<R, 3>(rows, x, ldx, i0, i1, n, saved, y, ldy); return;
    case 4: if constexpr (kT >= 4) Block<R, 4>(rows, x, ldx, i0, i1, n, saved, y, ldy); return;
    case 5: if constexpr (kT >= 5) Block<R, 5>(rows, x, ldx, i0, i1, n, saved, y, ldy); return;
    case 6: if constexpr (kT >= 6) Block<R, 6>(rows, x, ldx, i0, i1, n, saved, y, ldy); return;
  }
}

// The outputs y[t * ldy + r] of n_rows rows against n_tokens tokens. Up to kT
// tokens: one block of tokens, blocks of rows over whole rows. More (batched
// decode, prefill): a block of kT tokens stays in L1, kChunk elements of each
// at a time, while every block of rows passes by, so per step the rows come
// from L2 (or memory) and the tokens from L1; the accumulators wait in
// `saved` between chunks (faster than holding rows in L1 and streaming the
// tokens; docs/performance.md appendix "Kernel tuning").
constexpr size_t kChunk = 1024;

template <class Row>
void Tile(const Row* rows, size_t n_rows, const float* x, size_t ldx, size_t n_tokens, size_t n, float* y,
          size_t ldy) {
  constexpr size_t kRowSlot = size_t(kT) * kDotLanes;  // floats saved per row of a block
  const size_t chunk = n_tokens <= size_t(kT) ? n : kChunk;
  thread_local std::vector<float> saved;
  if (chunk < n) saved.resize(n_rows * kRowSlot);
  for (size_t t0 = 0; t0 < n_tokens; t0 += kT) {
    const size_t nt = std::min(n_tokens - t0, size_t(kT));
    const float* xt = x + t0 * ldx;
    float* yt = y + t0 * ldy;
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
      const size_t i1 = std::min(n, i0 + chunk);
      // A block's accumulators: from its first row's slot on (R * nt * 16
      // floats, within its R rows' slots). No slots when one chunk covers n.
      auto slot = [&](size_t r) { return chunk < n ? saved.data() + r * kRowSlot : nullptr; };
      size_t r = 0;
      if (nt == 1)  // more rows in flight: memory-level parallelism for decoding
        for (; r + kR1 <= n_rows; r += kR1) RowBlock<kR1>(rows + r, xt, ldx, nt, i0, i1, n, slot(r), yt + r, ldy);
      for (; r + kR <= n_rows; r += kR) RowBlock<kR>(rows + r, xt, ldx, nt, i0, i1, n, slot(r), yt + r, ldy);
      for (; r < n_rows; ++r) RowBlock<1>(rows + r, xt, ldx, nt, i0, i1, n, slot(r), yt + r, ldy);
    }
  }
}

// Rows in their stored type, decoded in registers: 64 at a time (F16 at 2048
// columns: 256 KiB, held in L2 while every token block passes by).
template <class Row, class Elem>
void FusedRows(const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx, size_t n_tokens,
               size_t cols, float* y, size_t ldy) {
  constexpr size_t kRowsPerTile = 64;
  Row readers[kRowsPerTile];
  const auto* base = static_cast<const uint8_t*>(w);
  for (size_t r0 = 0; r0 < n_rows; r0 += kRowsPerTile) {
    const size_t nr = std::min(kRowsPerTile, n_rows - r0);
    for (size_t r = 0; r < nr; ++r) readers[r] = Row{reinterpret_cast<const Elem*>(base + (r0 + r) * row_stride)};
    Tile(readers, nr, x, ldx, n_tokens, cols, y + r0, ldy);
  }
}

void MatmulRowsFused(TensorType t, const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx,
                     size_t n_tokens, size_t cols, float* y, size_t ldy) {
  switch (t) {
    case TensorType::F32: return FusedRows<RowF32, float>(w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
    case TensorType::F16: return FusedRows<RowF16, uint16_t>(w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
    case TensorType::BF16:
      return FusedRows<RowBF16, uint16_t>(w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
    default: return;
  }
}

float DotF32(const float* a, const float* b, size_t n) {
  float y;
  const RowF32 row{a};
  Block<1, 1>(&row, b, 0, 0, n, n, nullptr, &y, 0);
  return y;
}

float DotF16F32(const uint16_t* a, const float* b, size_t n) {
  float y;
  const RowF16 row{a};
  Block<1, 1>(&row, b, 0, 0, n, n, nullptr, &y, 0);
  return y;
}

template <class Row>
void Axpy(float a, Row x, float* y, size_t n) {
  const V av = hn::Set(DF(), a);
  size_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    V xv[kV];
    x.Load(i, xv);
    for (size_t v = 0; v < kV; ++v) hn::StoreU(hn::MulAdd(av, xv[v], hn::LoadU(DF(), y + i + v * kL)), DF(), y + i + v * kL);
  }
  if (i < n) {
    V xv[kV];
    x.LoadTail(i, n, xv);
    alignas(64) float buf[kDotLanes] = {};
    std::memcpy(buf, y + i, (n - i) * sizeof(float));
    for (size_t v = 0; v < kV; ++v) hn::Store(hn::MulAdd(av, xv[v], hn::Load(DF(), buf + v * kL)), DF(), buf + v * kL);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

void AxpyF32(float a, const float* x, float* y, size_t n) { Axpy(a, RowF32{x}, y, n); }
void AxpyF16(float a, const uint16_t* x, float* y, size_t n) { Axpy(a, RowF16{x}, y, n); }

// y += a[r] * x[r] for r in order, y kept in registers across the rows: per
// element the same fmas as one Axpy per row.
template <class Row, class Elem>
void AxpyRows(const float* a, const Elem* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  size_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    V acc[kV];
    for (size_t v = 0; v < kV; ++v) acc[v] = hn::LoadU(DF(), y + i + v * kL);
    for (size_t r = 0; r < n_rows; ++r) {
      V xv[kV];
      Row{x + r * ldx}.Load(i, xv);
      const V av = hn::Set(DF(), a[r]);
      for (size_t v = 0; v < kV; ++v) acc[v] = hn::MulAdd(av, xv[v], acc[v]);
    }
    for (size_t v = 0; v < kV; ++v) hn::StoreU(acc[v], DF(), y + i + v * kL);
  }
  if (i < n)
    for (size_t r = 0; r < n_rows; ++r) Axpy(a[r], Row{x + r * ldx + i}, y + i, n - i);
}

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
    c[k] = hn::Add(V{_mm512_shuffle_f32x4(b[2 * k].raw, b[2 * k + 1].raw, 0x88)},
                   V{_mm512_shuffle_f32x4(b[2 * k].raw, b[2 * k + 1].raw, 0xDD)});
  for (int m = 0; m < 2; ++m)  // + 2, within blocks
    e[m] = hn::Add(hn::InterleaveLower(d, c[2 * m], c[2 * m + 1]), hn::InterleaveUpper(d, c[2 * m], c[2 * m + 1]));
  return hn::Add(hn::InterleaveLower(d, e[0], e[1]), hn::InterleaveUpper(d, e[0], e[1]));  // + 1
}
#endif

template <class Row, class Elem>
void AttendScoresRows(const float* q, size_t n_q, size_t hd, const PagedRows& k, size_t n, float* scores,
                      size_t ld_s) {
  const Elem* zero;
  if constexpr (std::is_same_v<Elem, float>) zero = kZeroF32;
  else zero = kZeroF16;
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

void AxpyRowsF32(const float* a, const float* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  AxpyRows<RowF32>(a, x, ldx, n_rows, y, n);
}
void AxpyRowsF16(const float* a, const uint16_t* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  AxpyRows<RowF16>(a, x, ldx, n_rows, y, n);
}

// x[i] = exp(scale x[i] - max) / sum over i: three passes over x (in L1),
// Highway's vector exp, and the sum as 16 partial sums reduced as in a dot
// (so AVX2 and AVX-512 give the same bits).
void SoftmaxScaled(float* x, size_t n, float scale) {
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
  const V inv = hn::Set(d, 1.0f / ReduceLanes(acc));
  for (i = 0; i + kL <= n; i += kL) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), inv), d, x + i);
  for (; i < n; ++i) x[i] *= hn::GetLane(inv);
}

// gate[i] = silu(gate[i]) * up[i], as the scalar gate / (1 + exp(-gate)) *
// up with Highway's vector exp. Its argument is capped at 100 (the exp is
// valid up to 104): exp(100) overflows a float to infinity, as std::exp's
// would, and the gate's silu is -0.
void SwiGlu(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, size_t n) {
  const DF d;
  const V one = hn::Set(d, 1.0f), cap = hn::Set(d, 100.0f);
  auto silu_times = [&](V g, V u) HWY_ATTR {
    return hn::Mul(hn::Div(g, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(g), cap)))), u);
  };
  size_t i = 0;
  for (; i + kL <= n; i += kL) hn::StoreU(silu_times(hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, gate + i);
  if (i == n) return;
  alignas(64) float g[kL] = {}, u[kL] = {};
  std::memcpy(g, gate + i, (n - i) * sizeof(float));
  std::memcpy(u, up + i, (n - i) * sizeof(float));
  hn::Store(silu_times(hn::Load(d, g), hn::Load(d, u)), d, g);
  std::memcpy(gate + i, g, (n - i) * sizeof(float));
}

// Decoding: the row readers' loads stored back.
template <class Row>
void Decode(Row row, float* dst, size_t n) {
  constexpr size_t kW = Row::kStep / kL;
  size_t i = 0;
  for (; i + Row::kStep <= n; i += Row::kStep) {
    V v[kW];
    row.Load(i, v);
    for (size_t j = 0; j < kW; ++j) hn::StoreU(v[j], DF(), dst + i + j * kL);
  }
  if (i < n) {
    V v[kW];
    row.LoadTail(i, n, v);
    alignas(64) float buf[kDotLanes];
    for (size_t j = 0; j < kV; ++j) hn::Store(v[j], DF(), buf + j * kL);
    std::memcpy(dst + i, buf, (n - i) * sizeof(float));
  }
}

void DequantizeRowSimd(TensorType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case TensorType::F16: return Decode(RowF16{static_cast<const uint16_t*>(src)}, dst, n);
    case TensorType::BF16: return Decode(RowBF16{static_cast<const uint16_t*>(src)}, dst, n);
    case TensorType::Q8_0: return Decode(RowQ8_0{static_cast<const BlockQ8_0*>(src)}, dst, n);
    default: return dequantize_row(t, src, dst, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(MatmulRowsFused);
HWY_EXPORT(DotF32);
HWY_EXPORT(DotF16F32);
HWY_EXPORT(AxpyF32);
HWY_EXPORT(AxpyF16);
HWY_EXPORT(AxpyRowsF32);
HWY_EXPORT(AxpyRowsF16);
HWY_EXPORT(DequantizeRowSimd);
HWY_EXPORT(SoftmaxScaled);
HWY_EXPORT(SwiGlu);
HWY_EXPORT(AttendScores);
HWY_EXPORT(AttendValues);

bool simd_float_row_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

void dequantize_row_simd(TensorType t, const void* src, float* dst, size_t n) {
  row_bytes(t, n);  // checks n is whole blocks
  HWY_DYNAMIC_DISPATCH(DequantizeRowSimd)(t, src, dst, n);
}

namespace {
// The reference summation over n elements of get(i) * b[i].
template <class Get>
float dot_scalar(Get get, const float* b, size_t n) {
  float s[kDotLanes] = {};
  for (size_t i = 0; i < n; ++i) s[i % kDotLanes] = std::fma(get(i), b[i], s[i % kDotLanes]);
  if (n % kDotLanes)  // the zero padding of the last chunk (it can turn -0 into +0)
    for (size_t j = n % kDotLanes; j < kDotLanes; ++j) s[j] = std::fma(0.0f, 0.0f, s[j]);
  for (size_t w = kDotLanes / 2; w >= 1; w /= 2)
    for (size_t j = 0; j < w; ++j) s[j] += s[j + w];
  return s[0];
}
}  // namespace

float dot_f32_scalar(const float* a, const float* b, size_t n) {
  return dot_scalar([a](size_t i) { return a[i]; }, b, n);
}
float dot_f16_f32_scalar(const uint16_t* a, const float* b, size_t n) {
  return dot_scalar([a](size_t i) { return f16_to_f32(a[i]); }, b, n);
}

float dot_f32(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotF32)(a, b, n); }
float dot_f16_f32(const uint16_t* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotF16F32)(a, b, n); }
void axpy_f32(float a, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(AxpyF32)(a, x, y, n); }
void axpy_f16(float a, const uint16_t* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(AxpyF16)(a, x, y, n); }
void axpy_rows_f32(const float* a, const float* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(AxpyRowsF32)(a, x, ldx, n_rows, y, n);
}
void axpy_rows_f16(const float* a, const uint16_t* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(AxpyRowsF16)(a, x, ldx, n_rows, y, n);
}

void softmax_scaled(float* x, size_t n, float scale) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(SoftmaxScaled)(x, n, scale);
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

void swiglu_simd(float* gate, const float* up, size_t n) { HWY_DYNAMIC_DISPATCH(SwiGlu)(gate, up, n); }

void matmul_rows_fused(TensorType t, const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tokens, size_t cols, float* y, size_t ldy) {
  if (!simd_float_row_type(t)) fail<InvalidArgument>("no fused float kernel for {}", tensor_type_name(t));
  row_bytes(t, cols);
  HWY_DYNAMIC_DISPATCH(MatmulRowsFused)(t, w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
}

}  // namespace pagoda
#endif  // HWY_ONCE
