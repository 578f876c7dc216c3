// SIMD kernels behind vec_dot_tile (kernels/quant_dot.h). Highway compiles the
// part between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE once per target
// (AVX2, AVX-512, AVX-512 VNNI, scalar fallback); the rest picks the target
// at run time and splits a tile into weight rows and chunks of blocks.
//
// A kernel has two halves. The integer half computes every block's exact
// int32 sums for one weight row against 1-8 activation rows (exact in any
// order): codes decoded once per block, multiplied with vpmaddubsw on x86
// (unsigned codes times signed activations, two products per 16-bit lane;
// every format's pair sums stay below 2^15) and vpmaddwd / vpdpwssd (16-bit
// sub-block scales applied while widening to 32 bits); the 16 or so partial
// vectors of a few blocks are then reduced together by a transposing fold.
// The float half applies the block scales with the scalar kernels' exact
// expressions, block by block in order, one activation row per lane. So each
// result is bit-identical to the scalar kernel of dot.cpp on every target.
// For one activation row (decode), the kernels take 2-4 weight rows side by
// side instead (ManyRowsOneTokenQ4K, ManyRowsOneTokenQ6K, ManyRowsOneTokenLegacy): one reduction per
// block for all the rows, and the rows' float sums as the lanes of one vector.
// On AVX-512 VNNI the 32-element formats (Q4_0, Q5_0, Q8_0) multiply with
// vpdpbusd (four products per 32-bit lane) and put two rows' blocks (decode)
// or two tokens' blocks (tiles) in the halves of one 512-bit vector.
#include "kernels/quant_dot.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/quant_dot_tables.h"
#include "quant/blocks.h"
#include "quant/dot.h"
#include "util/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant_dot.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// The raw x86 operations (and the PAGODA_X86_* target tests), per target.
#include "kernels/x86/highway_ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using dot_tables::ChunkSums;
using dot_tables::kChunkBlocks;
using dot_tables::kPad;

// v, hidden from the optimizer: an empty asm that might have changed it.
template <class V>
HWY_INLINE V Opaque(V v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128
  asm("" : "+x"(v.raw));
#else
  asm volatile("" : : "r"(&v) : "memory");
#endif
  return v;
}

// An F16 scale as a float (one vcvtph2ps where the CPU has F16C).
// A software prefetch into L2 (prefetcht1): for decode's streams of weight
// rows, measured ~5% faster than into L1 (docs/performance.md appendix).
HWY_INLINE void PrefetchL2(const void* p) { __builtin_prefetch(p, 0, 2); }

HWY_INLINE float HalfToFloat(const uint8_t* p) {
  const hn::CappedTag<float, 1> df;
  const hn::Rebind<uint16_t, decltype(df)> du;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return hn::GetLane(hn::PromoteTo(df, hn::BitCast(dh, hn::Set(du, bits))));
}

// out[i] = the F16 scale at base + i * stride (bytes), as a float, i < n.
HWY_INLINE void HalfScales(const uint8_t* base, size_t stride, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(base + i * stride);
}

#if HWY_TARGET == HWY_SCALAR
// Single-lane vectors: the scalar kernels' per-block sums, block by block.
template <class Block, class XBlock, class Fn>
void ScalarSums(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, ChunkSums* out, Fn fn) {
  const size_t slots = dot_tables::sum_slots(std::is_same_v<Block, BlockQ4_K> ? 2 * n_x : n_x);
  for (int k = 0; k < n_x; ++k)
    for (size_t b = 0; b < nb; ++b)
      fn(static_cast<const Block*>(w)[b], reinterpret_cast<const XBlock*>(x + size_t(k) * x_stride)[b], b * slots + k,
         b * slots + n_x + k);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  if constexpr (std::is_same_v<Block, BlockQ6_K>) {
    HalfScales(wb + offsetof(BlockQ6_K, d), sizeof(Block), nb, out->w_d);
  } else {
    HalfScales(wb, sizeof(Block), nb, out->w_d);  // d first in the other formats
  }
  if constexpr (std::is_same_v<Block, BlockQ4_K>)
    HalfScales(wb + offsetof(BlockQ4_K, dmin), sizeof(Block), nb, out->w_dmin);
}
#define PAGODA_DOT_SCALAR(Name, Block, XBlock, block_dot)                                                              \
  void Name(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, ChunkSums* out) {                    \
    ScalarSums<Block, XBlock>(w, x, x_stride, n_x, nb, out, [&](const Block& wb, const XBlock& xb, size_t i, size_t) { \
      out->sums[i] = block_dot(wb, xb);                                                                                \
    });                                                                                                                \
  }
PAGODA_DOT_SCALAR(IntSumsQ4_0, BlockQ4_0, BlockQ8_0, block_dot_q4_0)
PAGODA_DOT_SCALAR(IntSumsQ5_0, BlockQ5_0, BlockQ8_0, block_dot_q5_0)
PAGODA_DOT_SCALAR(IntSumsQ8_0, BlockQ8_0, BlockQ8_0, block_dot_q8_0)
PAGODA_DOT_SCALAR(IntSumsQ6K, BlockQ6_K, BlockQ8_K, block_dot_q6_k)
#undef PAGODA_DOT_SCALAR
void IntSumsQ4K(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, ChunkSums* out) {
  ScalarSums<BlockQ4_K, BlockQ8_K>(w, x, x_stride, n_x, nb, out,
                                   [&](const BlockQ4_K& wb, const BlockQ8_K& xb, size_t i, size_t j) {
                                     block_dot_q4_k(wb, xb, out->sums[i], out->sums[j]);
                                   });
}
#else
#include "kernels/quant_dot_common-inl.h"
#include "kernels/quant_dot_legacy-inl.h"
#include "kernels/quant_dot_q4k-inl.h"
#include "kernels/quant_dot_q6k-inl.h"

#undef PAGODA_DOT_X86
#undef PAGODA_DOT_WIDE
#endif  // HWY_TARGET == HWY_SCALAR

// ------------------------------------------------------------ float side
//
// acc[k] += each block's float term in block order, with the scalar kernels'
// exact expressions (see dot.cpp): the activation rows are vector lanes, each
// lane one independent running sum. xd[kXdStride b + k] is row k's scale of
// block b.
// The compiler may not fuse a multiply with the add or subtract after it (GCC
// contracts by default in C++, and these targets have FMA, the baseline the
// scalar kernels are compiled for does not), hence Opaque; the tests compare
// with the scalar kernels bit for bit on every target.

enum class Terms { kLegacy, kQ4K, kQ6K };

template <Terms kTerms, int K>
void AddTerms(const ChunkSums& c, size_t nb, const float* xd, float* acc) {
  const hn::CappedTag<float, dot_tables::sum_slots(K)> df;  // xd is zero in lanes past K
  const hn::RebindToSigned<decltype(df)> di;
  constexpr size_t kSlots = dot_tables::sum_slots(kTerms == Terms::kQ4K ? 2 * K : K);
  for (size_t k0 = 0; k0 < size_t(K); k0 += hn::Lanes(df)) {
    auto a = hn::LoadU(df, acc + k0);
    for (size_t b = 0; b < nb; ++b) {
      const auto x = hn::LoadU(df, xd + dot_tables::kXdStride * b + k0);
      const auto s = hn::ConvertTo(df, hn::LoadU(di, c.sums + b * kSlots + k0));
      const auto wd = hn::Set(df, c.w_d[b]);
      if constexpr (kTerms == Terms::kLegacy) {  // d_w * d_x * s
        a = hn::Add(a, Opaque(hn::Mul(hn::Mul(wd, x), s)));
      } else if constexpr (kTerms == Terms::kQ6K) {  // d_x * d_w * s
        a = hn::Add(a, Opaque(hn::Mul(hn::Mul(x, wd), s)));
      } else {  // d_x * (d_w * scaled - dmin_w * mins)
        const auto m = hn::ConvertTo(df, hn::LoadU(di, c.sums + b * kSlots + K + k0));
        const auto diff = hn::Sub(Opaque(hn::Mul(wd, s)), Opaque(hn::Mul(hn::Set(df, c.w_dmin[b]), m)));
        a = hn::Add(a, Opaque(hn::Mul(x, diff)));
      }
    }
    hn::StoreU(a, df, acc + k0);
  }
}

// ------------------------------------------------------------ entry points

// One weight row against n_x activation rows over nb blocks (at most
// kChunkBlocks): acc[k] += the row pair's block terms. n_x (1-4 or 8) is
// dispatched to a template parameter so the per-row accumulators live in
// registers.
#define PAGODA_DOT_ENTRY(Name, Kernel, Block, kTerms, kMaxK)                                                     \
  void Name(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, const float* xd, float* acc) { \
    ChunkSums c;                                                                                                 \
    switch (n_x) {                                                                                               \
      case 1: Kernel<1>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 1>(c, nb, xd, acc);                                                            \
      case 2: Kernel<2>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 2>(c, nb, xd, acc);                                                            \
      case 3: Kernel<3>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 3>(c, nb, xd, acc);                                                            \
      case 4: Kernel<4>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 4>(c, nb, xd, acc);                                                            \
      default:                                                                                                   \
        if constexpr (kMaxK == 8) {                                                                              \
          Kernel<8>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                          \
          return AddTerms<kTerms, 8>(c, nb, xd, acc);                                                            \
        }                                                                                                        \
    }                                                                                                            \
  }

#if HWY_TARGET == HWY_SCALAR
template <int K>
void Q4_0Sums(const BlockQ4_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  IntSumsQ4_0(w, x, s, K, nb, out);
}
template <int K>
void Q5_0Sums(const BlockQ5_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  IntSumsQ5_0(w, x, s, K, nb, out);
}
template <int K>
void Q8_0Sums(const BlockQ8_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  IntSumsQ8_0(w, x, s, K, nb, out);
}
template <int K>
void Q4KSums(const BlockQ4_K* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  IntSumsQ4K(w, x, s, K, nb, out);
}
template <int K>
void Q6KSums(const BlockQ6_K* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  IntSumsQ6K(w, x, s, K, nb, out);
}
#else
template <int K>
void Q4_0Sums(const BlockQ4_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  LegacySums<Legacy::kQ4_0, K>(w, x, s, nb, out);
}
template <int K>
void Q5_0Sums(const BlockQ5_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  LegacySums<Legacy::kQ5_0, K>(w, x, s, nb, out);
}
template <int K>
void Q8_0Sums(const BlockQ8_0* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) {
  LegacySums<Legacy::kQ8_0, K>(w, x, s, nb, out);
}
#endif

// The largest n_x of each, as measured (bench_quant_dot_bench; Q6_K's 8-row
// kernel is slower than two 4-row calls, the others faster).
PAGODA_DOT_ENTRY(OneRowManyTokensQ4_0, Q4_0Sums, BlockQ4_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ5_0, Q5_0Sums, BlockQ5_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ8_0, Q8_0Sums, BlockQ8_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ4K, Q4KSums, BlockQ4_K, Terms::kQ4K, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ6K, Q6KSums, BlockQ6_K, Terms::kQ6K, 4)
#undef PAGODA_DOT_ENTRY

#if !PAGODA_X86_AVX2
// Elsewhere one weight row at a time (the same results).
void ManyRowsOneTokenQ4K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd,
                         float* acc, size_t /*ahead*/) {
  for (int r = 0; r < n_w; ++r)
    OneRowManyTokensQ4K(static_cast<const uint8_t*>(w) + size_t(r) * w_stride, x, 0, 1, nb, xd, acc + r);
}
#endif
#if !PAGODA_X86_VNNI512
// vpdpbusd is only assumed on AVX3_DL; elsewhere one weight row at a time,
// with the activations' scales (not passed in for these formats) as floats,
// each row's stream fetched `ahead` bytes on (measured faster on AVX2,
// docs/performance.md appendix).
#define PAGODA_MANY_ROWS_ONE_TOKEN(Name, OneRowManyTokens, Block)                                                  \
  void Name(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* /*xd*/, float* acc, \
            size_t ahead) {                                                                                        \
    alignas(32) float xd[kChunkBlocks][dot_tables::kXdStride] = {};                                                \
    for (size_t b = 0; b < nb; ++b) xd[b][0] = HalfToFloat(x + b * sizeof(BlockQ8_0));                             \
    for (int r = 0; r < n_w; ++r) {                                                                                \
      const uint8_t* row = static_cast<const uint8_t*>(w) + size_t(r) * w_stride;                                  \
      for (size_t line = 0; line < nb * sizeof(Block); line += 64) PrefetchL2(row + ahead + line);                 \
      OneRowManyTokens(row, x, 0, 1, nb, &xd[0][0], acc + r);                                                      \
    }                                                                                                              \
  }
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ4_0, OneRowManyTokensQ4_0, BlockQ4_0)
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ5_0, OneRowManyTokensQ5_0, BlockQ5_0)
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ8_0, OneRowManyTokensQ8_0, BlockQ8_0)
#undef PAGODA_MANY_ROWS_ONE_TOKEN
#endif
#if HWY_TARGET == HWY_SCALAR
void ManyRowsOneTokenQ6K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd,
                         float* acc, size_t /*ahead*/) {
  for (int r = 0; r < n_w; ++r)
    OneRowManyTokensQ6K(static_cast<const uint8_t*>(w) + size_t(r) * w_stride, x, 0, 1, nb, xd, acc + r);
}
#endif

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

#if PAGODA_X86_VNNI512
template <class Block>
void RowPointers(const void* w, size_t w_stride, int n_rows, const Block** rows) {
  for (int r = 0; r < kDotRowsMax; ++r)  // rows past n_rows repeat the last; their outputs are dropped
    rows[r] =
        reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_rows - 1)) * w_stride);
}

void TokenGroupDot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  switch (t) {
    case TensorType::Q4_0: {
      const BlockQ4_0* rows[kDotRowsMax];
      RowPointers(w, w_stride, n_rows, rows);
      return TokenGroupDotT<Legacy::kQ4_0>(rows, g, out);
    }
    case TensorType::Q5_0: {
      const BlockQ5_0* rows[kDotRowsMax];
      RowPointers(w, w_stride, n_rows, rows);
      return TokenGroupDotT<Legacy::kQ5_0>(rows, g, out);
    }
    case TensorType::Q4_K: {
      const BlockQ4_K* rows[kDotRowsMax];
      RowPointers(w, w_stride, n_rows, rows);
      return TokenGroupDotQ4K(rows, g, out);
    }
    case TensorType::Q6_K: {
      const BlockQ6_K* rows[kDotRowsMax];
      RowPointers(w, w_stride, n_rows, rows);
      return TokenGroupDotQ6K(rows, g, out);
    }
    default: {
      const BlockQ8_0* rows[kDotRowsMax];
      RowPointers(w, w_stride, n_rows, rows);
      return TokenGroupDotT<Legacy::kQ8_0>(rows, g, out);
    }
  }
}
bool IsAvx512Vnni() { return true; }
#else
// Elsewhere the scalar kernels, token by token, on the group's activation
// rows put back together (correct, for the tests; matmul takes the tiles
// instead, see prefers_token_groups).
void TokenGroupDot(TensorType t, const void* w_rows, size_t w_stride, int n_rows, const TokenGroup& g,
                   float* out_rows) {
  const size_t elems = g.type == TensorType::Q8_K ? kQKK : kQK, quads = elems / 4;
  std::vector<int8_t> qs(g.nb * elems);
  std::vector<BlockQ8_0> x0(g.type == TensorType::Q8_0 ? g.nb : 0);
  std::vector<BlockQ8_K> xk(g.type == TensorType::Q8_K ? g.nb : 0);
  for (int k = 0; k < kGroupTokens; ++k) {
    for (size_t b = 0; b < g.nb; ++b)
      for (size_t q = 0; q < quads; ++q)
        std::memcpy(&qs[b * elems + 4 * q], g.codes.data() + ((b * quads + q) * kGroupTokens + size_t(k)) * 4, 4);
    const float* scales = g.scales.data() + k;  // block b's at scales[kGroupTokens * b]
    for (size_t b = 0; b < x0.size(); ++b) {
      x0[b].d = f32_to_f16(scales[kGroupTokens * b]);  // an F16 value: exact both ways
      std::memcpy(x0[b].qs, &qs[b * kQK], kQK);
    }
    for (size_t b = 0; b < xk.size(); ++b) {
      xk[b].d = scales[kGroupTokens * b];
      std::memcpy(xk[b].qs, &qs[b * kQKK], kQKK);
      for (int i = 0; i < kQKK / 16; ++i) {
        int sum = 0;
        for (int e = 0; e < 16; ++e) sum += xk[b].qs[16 * i + e];
        xk[b].bsums[i] = int16_t(sum);
      }
    }
    for (int r = 0; r < n_rows; ++r) {
      const void* w = static_cast<const uint8_t*>(w_rows) + size_t(r) * w_stride;
      float* out = out_rows + kGroupTokens * r;
      switch (t) {
        case TensorType::Q4_0: out[k] = vec_dot_q4_0_q8_0(static_cast<const BlockQ4_0*>(w), x0.data(), g.nb); break;
        case TensorType::Q5_0: out[k] = vec_dot_q5_0_q8_0(static_cast<const BlockQ5_0*>(w), x0.data(), g.nb); break;
        case TensorType::Q4_K: out[k] = vec_dot_q4_k_q8_k(static_cast<const BlockQ4_K*>(w), xk.data(), g.nb); break;
        case TensorType::Q6_K: out[k] = vec_dot_q6_k_q8_k(static_cast<const BlockQ6_K*>(w), xk.data(), g.nb); break;
        default: out[k] = vec_dot_q8_0_q8_0(static_cast<const BlockQ8_0*>(w), x0.data(), g.nb);
      }
    }
  }
}
bool IsAvx512Vnni() { return false; }
#endif
bool IsX86Avx2() { return PAGODA_X86_AVX2; }

// 8 activation rows per tile keep their accumulators in the 32 vector
// registers of AVX-512; with 16 they would spill.
int TileTokens() { return PAGODA_X86_AVX512 ? kDotTokensMax : 4; }

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "util/error.h"
#include "util/half.h"

namespace pagoda {

HWY_EXPORT(OneRowManyTokensQ4_0);
HWY_EXPORT(OneRowManyTokensQ5_0);
HWY_EXPORT(OneRowManyTokensQ8_0);
HWY_EXPORT(OneRowManyTokensQ4K);
HWY_EXPORT(OneRowManyTokensQ6K);
HWY_EXPORT(ManyRowsOneTokenQ4K);
HWY_EXPORT(ManyRowsOneTokenQ6K);
HWY_EXPORT(ManyRowsOneTokenQ4_0);
HWY_EXPORT(ManyRowsOneTokenQ5_0);
HWY_EXPORT(ManyRowsOneTokenQ8_0);
HWY_EXPORT(TargetName);
HWY_EXPORT(TileTokens);
HWY_EXPORT(TokenGroupDot);
HWY_EXPORT(IsAvx512Vnni);
HWY_EXPORT(IsX86Avx2);

namespace {

using dot_tables::kChunkBlocks;

using OneRowManyTokensFn = void (*)(const void*, const uint8_t*, size_t, int, size_t, const float*, float*);
using ManyRowsOneTokenFn = void (*)(const void*, size_t, int, const uint8_t*, size_t, const float*, float*, size_t);

float activation_scale(const BlockQ8_0& x) { return f16_to_f32(x.d); }
float activation_scale(const BlockQ8_K& x) { return x.d; }

// Chunk by chunk of blocks: the activation rows' block scales as floats (the
// same for every weight row), then each weight row's running sums, for the
// activation rows in groups the kernels take (kMaxGroup: 8 or 4; then 4 and
// the rest).
template <class Block, class XBlock, int kMaxGroup = 8>
void dot_tile(OneRowManyTokensFn row_dots, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride,
              int n_x, size_t nb, float* out, size_t out_stride) {
  alignas(32) float acc[kDotRowsMax][kDotTokensMax] = {};  // [weight row][activation row]
  alignas(32) float xd[kChunkBlocks][dot_tables::kXdStride];
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (size_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
    const size_t cb = std::min(kChunkBlocks, nb - b0);
    for (int k = 0; k < n_x; ++k) {
      const XBlock* xk = reinterpret_cast<const XBlock*>(xb + size_t(k) * x_stride) + b0;
      for (size_t b = 0; b < cb; ++b) xd[b][k] = activation_scale(xk[b]);
    }
    for (int k = n_x; k < kDotTokensMax; ++k)  // the kernels compute lanes past n_x too
      for (size_t b = 0; b < cb; ++b) xd[b][k] = 0.0f;
    for (int r = 0; r < n_w; ++r)
      for (int k0 = 0; k0 < n_x;) {
        const int n = n_x - k0 >= kMaxGroup ? kMaxGroup : std::min(4, n_x - k0);
        row_dots(wb + size_t(r) * w_stride + b0 * sizeof(Block), xb + size_t(k0) * x_stride + b0 * sizeof(XBlock),
                 x_stride, n, cb, &xd[0][k0], acc[r] + k0);
        k0 += n;
      }
  }
  for (int k = 0; k < n_x; ++k)
    for (int r = 0; r < n_w; ++r) out[size_t(k) * out_stride + r] = acc[r][k];
}

// One activation row against n_w weight rows, chunk by chunk (a kernel that
// takes the weight rows together). Each row is prefetched kPrefetchRows rows
// on in its own stream (matmul reads rows as streams: w_stride may be many rows).
constexpr size_t kPrefetchRows = 2;
template <class Block, class XBlock>
void dot_rows(ManyRowsOneTokenFn rows_dot, const void* w, size_t w_stride, int n_w, const void* x, size_t nb,
              float* out) {
  float acc[kDotRowsMax] = {};
  alignas(32) float xd[kChunkBlocks][dot_tables::kXdStride] = {};
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (size_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
    const size_t cb = std::min(kChunkBlocks, nb - b0);
    const XBlock* xk = reinterpret_cast<const XBlock*>(xb) + b0;
    if constexpr (std::is_same_v<XBlock, BlockQ8_K>)  // the Q8_0 kernels read the F16 scales themselves
      for (size_t b = 0; b < cb; ++b) xd[b][0] = activation_scale(xk[b]);
    rows_dot(wb + b0 * sizeof(Block), w_stride, n_w, xb + b0 * sizeof(XBlock), cb, &xd[0][0], acc,
             kPrefetchRows * nb * sizeof(Block));
  }
  for (int r = 0; r < n_w; ++r) out[r] = acc[r];
}

}  // namespace

void vec_dot_tile(TensorType t, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride, int n_x,
                  size_t n, float* out, size_t out_stride) {
  if (n_w < 1 || n_w > kDotRowsMax || n_x < 1 || n_x > kDotTokensMax)
    fail<InvalidArgument>("vec_dot_tile takes 1 to {} weight rows and 1 to {} activation rows, not {} x {}",
                          kDotRowsMax, kDotTokensMax, n_w, n_x);
  switch (t) {
    case TensorType::Q4_0:
      if (n_x == 1 && n_w > 1)
        return dot_rows<BlockQ4_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(ManyRowsOneTokenQ4_0), w, w_stride, n_w, x, n / kQK,
                                              out);
      return dot_tile<BlockQ4_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(OneRowManyTokensQ4_0), w, w_stride, n_w, x, x_stride,
                                            n_x, n / kQK, out, out_stride);
    case TensorType::Q5_0:
      if (n_x == 1 && n_w > 1)
        return dot_rows<BlockQ5_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(ManyRowsOneTokenQ5_0), w, w_stride, n_w, x, n / kQK,
                                              out);
      return dot_tile<BlockQ5_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(OneRowManyTokensQ5_0), w, w_stride, n_w, x, x_stride,
                                            n_x, n / kQK, out, out_stride);
    case TensorType::Q8_0:
      if (n_x == 1 && n_w > 1)
        return dot_rows<BlockQ8_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(ManyRowsOneTokenQ8_0), w, w_stride, n_w, x, n / kQK,
                                              out);
      return dot_tile<BlockQ8_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(OneRowManyTokensQ8_0), w, w_stride, n_w, x, x_stride,
                                            n_x, n / kQK, out, out_stride);
    case TensorType::Q4_K:
      if (n_x == 1 && n_w > 1)
        return dot_rows<BlockQ4_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(ManyRowsOneTokenQ4K), w, w_stride, n_w, x, n / kQKK,
                                              out);
      return dot_tile<BlockQ4_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(OneRowManyTokensQ4K), w, w_stride, n_w, x, x_stride,
                                            n_x, n / kQKK, out, out_stride);
    case TensorType::Q6_K:
      if (n_x == 1 && n_w > 1)
        return dot_rows<BlockQ6_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(ManyRowsOneTokenQ6K), w, w_stride, n_w, x, n / kQKK,
                                              out);
      return dot_tile<BlockQ6_K, BlockQ8_K, 4>(HWY_DYNAMIC_DISPATCH(OneRowManyTokensQ6K), w, w_stride, n_w, x, x_stride,
                                               n_x, n / kQKK, out, out_stride);
    default: fail<Unsupported>("no quantized dot product for {}", tensor_type_name(t));
  }
}

// The SIMD kernels, bit-identical to the scalar ones of quant/dot.h.
float vec_dot(TensorType t, const void* w, const void* x, size_t n) {
  float out;
  vec_dot_tile(t, w, 0, 1, x, 0, 1, n, &out, 1);
  return out;
}

const char* dot_simd_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

int vec_dot_tile_tokens() { return HWY_DYNAMIC_DISPATCH(TileTokens)(); }

void prepare_token_group(TensorType xt, const void* x, size_t x_stride, int n_tokens, size_t nb, TokenGroup& g) {
  if (n_tokens < 1 || n_tokens > kGroupTokens)
    fail<InvalidArgument>("a token group holds 1 to {} tokens, not {}", kGroupTokens, n_tokens);
  if (xt != TensorType::Q8_0 && xt != TensorType::Q8_K)
    fail<Unsupported>("token groups take Q8_0 or Q8_K activations, not {}", tensor_type_name(xt));
  const bool k_quant = xt == TensorType::Q8_K;
  const size_t elems = k_quant ? kQKK : kQK, quads = elems / 4;
  const size_t part = k_quant ? 16 : kQK, parts = elems / part;  // code sums: Q8_K's bsums, Q8_0's block
  g.type = xt;
  g.n_tokens = n_tokens;
  g.nb = nb;
  g.codes.assign(nb * quads * kGroupTokens * 4, 0);  // tokens past n_tokens: zero codes, sums and scales
  g.sums.assign(nb * parts * kGroupTokens, 0);
  g.scales.assign(nb * kGroupTokens, 0.0f);
  for (int k = 0; k < n_tokens; ++k) {
    const auto* row = static_cast<const uint8_t*>(x) + size_t(k) * x_stride;
    for (size_t b = 0; b < nb; ++b) {
      const int8_t* qs;
      if (k_quant) {
        const auto& block = reinterpret_cast<const BlockQ8_K*>(row)[b];
        qs = block.qs;
        g.scales[b * kGroupTokens + size_t(k)] = block.d;
      } else {
        const auto& block = reinterpret_cast<const BlockQ8_0*>(row)[b];
        qs = block.qs;
        g.scales[b * kGroupTokens + size_t(k)] = f16_to_f32(block.d);
      }
      for (size_t p = 0; p < parts; ++p) {
        int32_t sum = 0;
        for (size_t i = 0; i < part; ++i) sum += qs[p * part + i];
        g.sums[(b * parts + p) * kGroupTokens + size_t(k)] = sum;
      }
      for (size_t q = 0; q < quads; ++q)
        std::memcpy(&g.codes[((b * quads + q) * kGroupTokens + size_t(k)) * 4], qs + 4 * q, 4);
    }
  }
}

namespace {
bool has_token_group_dot(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q5_0 || t == TensorType::Q8_0 || t == TensorType::Q4_K ||
         t == TensorType::Q6_K;
}
}  // namespace

void token_group_dot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  if (!has_token_group_dot(t)) fail<Unsupported>("no token-group dot product for {}", tensor_type_name(t));
  if (n_rows < 1 || n_rows > kDotRowsMax)
    fail<InvalidArgument>("token_group_dot takes 1 to {} weight rows, not {}", kDotRowsMax, n_rows);
  if (g.type != activation_type(t))
    fail<InvalidArgument>("{} weights take {} activations, not {}", tensor_type_name(t),
                          tensor_type_name(activation_type(t)), tensor_type_name(g.type));
  HWY_DYNAMIC_DISPATCH(TokenGroupDot)(t, w, w_stride, n_rows, g, out);
}

bool prefers_token_groups(TensorType t) { return has_token_group_dot(t) && simd_target_is_avx512_vnni(); }

bool simd_target_is_avx512_vnni() { return HWY_DYNAMIC_DISPATCH(IsAvx512Vnni)(); }
bool simd_target_is_x86_avx2() { return HWY_DYNAMIC_DISPATCH(IsX86Avx2)(); }

bool q4k_wide_vectors() { return dot_tables::q4k_wide; }
void set_q4k_wide_vectors(bool on) { dot_tables::q4k_wide = on; }

}  // namespace pagoda
#endif  // HWY_ONCE
