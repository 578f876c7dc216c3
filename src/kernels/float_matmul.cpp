// Highway implementation of kernels/float_matmul.h: this file is compiled once per
// SIMD target (foreach_target.h) and the public functions dispatch at run time.
//
// The tile kernel computes a block of kR rows x kT tokens at a time: per
// step of 16 elements it loads kR row chunks and kT token chunks once and
// issues kR * kT FMAs, each output still owning its own accumulators, so
// blocking never changes a result. The lane shape, the reduction and the
// row readers: float_lanes-inl.h.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/float_matmul.h"
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
#define HWY_TARGET_INCLUDE "kernels/float_matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/float_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Block shape: accumulators kR * kT * kV plus kR * kV row vectors must fit the
// register file (32 vectors on AVX-512, 16 on AVX2).
constexpr int kR = kV == 1 ? 4 : 2;
constexpr int kT = kV == 1 ? 6 : kV == 2 ? 3 : 1;
constexpr int kR1 = kV == 1 ? 8 : 2;  // rows of a block with a single token

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

// MXFP4 (embedding lookups): a 32-element block per load; its 16 bytes of
// nibbles looked up in the table by two byte shuffles, then value * scale as
// in dequantize_row_mxfp4 (exact: a small integer times a power of two).
struct RowMXFP4 {
  static constexpr size_t kStep = kQK;
  static constexpr size_t kPrefetchBlocks = 48;  // as RowQ8_0's distance in bytes
  const BlockMXFP4* p;
  HWY_INLINE void Load(size_t i, V* out) const {
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const BlockMXFP4& b = p[i / kQK];
    __builtin_prefetch(&b + kPrefetchBlocks, 0, 2);  // into L2, see RowF16
    alignas(32) int8_t values[kQK];
#if HWY_TARGET == HWY_SCALAR
    for (int j = 0; j < kQK / 2; ++j) {
      values[j] = kMXFP4Values[b.qs[j] & 0xF];
      values[j + kQK / 2] = kMXFP4Values[b.qs[j] >> 4];
    }
#else
    const hn::Full128<uint8_t> d16;
    const auto table = hn::LoadU(d16, reinterpret_cast<const uint8_t*>(kMXFP4Values));
    const auto q = hn::LoadU(d16, b.qs);
    auto* bytes = reinterpret_cast<uint8_t*>(values);
    hn::Store(hn::TableLookupBytes(table, hn::And(q, hn::Set(d16, 0xF))), d16, bytes);
    hn::Store(hn::TableLookupBytes(table, hn::ShiftRight<4>(q)), d16, bytes + 16);
#endif
    const V d = hn::Set(DF(), mxfp4_scale(b.e));
    for (size_t v = 0; v < kQK / kL; ++v)
      out[v] = hn::Mul(hn::ConvertTo(DF(), hn::PromoteTo(di, hn::Load(d8, values + v * kL))), d);
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
    case 2:
      if constexpr (kT >= 2) Block<R, 2>(rows, x, ldx, i0, i1, n, saved, y, ldy);
      return;
    case 3:
      if constexpr (kT >= 3) Block<R, 3>(rows, x, ldx, i0, i1, n, saved, y, ldy);
      return;
    case 4:
      if constexpr (kT >= 4) Block<R, 4>(rows, x, ldx, i0, i1, n, saved, y, ldy);
      return;
    case 5:
      if constexpr (kT >= 5) Block<R, 5>(rows, x, ldx, i0, i1, n, saved, y, ldy);
      return;
    case 6:
      if constexpr (kT >= 6) Block<R, 6>(rows, x, ldx, i0, i1, n, saved, y, ldy);
      return;
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
void Tile(const Row* rows, size_t n_rows, const float* x, size_t ldx, size_t n_tokens, size_t n, float* y, size_t ldy) {
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
    case TensorType::BF16: return FusedRows<RowBF16, uint16_t>(w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
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
    for (size_t v = 0; v < kV; ++v)
      hn::StoreU(hn::MulAdd(av, xv[v], hn::LoadU(DF(), y + i + v * kL)), DF(), y + i + v * kL);
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

void AxpyRowsF32(const float* a, const float* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  AxpyRows<RowF32>(a, x, ldx, n_rows, y, n);
}
void AxpyRowsF16(const float* a, const uint16_t* x, size_t ldx, size_t n_rows, float* y, size_t n) {
  AxpyRows<RowF16>(a, x, ldx, n_rows, y, n);
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
    case TensorType::MXFP4: return Decode(RowMXFP4{static_cast<const BlockMXFP4*>(src)}, dst, n);
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

bool simd_float_row_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

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

void matmul_rows_fused(TensorType t, const void* w, size_t row_stride, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tokens, size_t cols, float* y, size_t ldy) {
  if (!simd_float_row_type(t)) fail<InvalidArgument>("no fused float kernel for {}", tensor_type_name(t));
  row_bytes(t, cols);
  HWY_DYNAMIC_DISPATCH(MatmulRowsFused)(t, w, row_stride, n_rows, x, ldx, n_tokens, cols, y, ldy);
}

}  // namespace pagoda
#endif  // HWY_ONCE
