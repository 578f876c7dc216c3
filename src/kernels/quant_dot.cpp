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
// side instead (RowsDotQ4K, RowsDotQ6K, RowsDotLegacy): one reduction per
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

#include "quant/blocks.h"
#include "quant/dot.h"
#include "util/half.h"

#ifndef PAGODA_QUANT_DOT_SIMD_TABLES
#define PAGODA_QUANT_DOT_SIMD_TABLES
namespace pagoda::dot_tables {

// Byte-shuffle indices that spread 16-bit sub-block scales (8 of them, in a
// 128-bit block) over the 16-bit lanes of pair products: entry q is the byte
// of the scale for stream byte q, where stream byte q belongs to the pair
// product of elements q & ~1 and q | 1 of the super-block.
constexpr std::array<uint8_t, kQKK> make_scale_index(int sub_block, int period) {
  std::array<uint8_t, kQKK> t{};
  for (int q = 0; q < kQKK; ++q) t[q] = uint8_t(2 * ((q % period) / sub_block) + (q & 1));
  return t;
}
// Q4_K: 8 sub-blocks of 32. Q6_K: 16 sub-blocks of 16, 8 per 128 elements.
alignas(64) inline constexpr auto kQ4KScaleIndex = make_scale_index(32, kQKK);
alignas(64) inline constexpr auto kQ6KScaleIndex = make_scale_index(16, kQKK / 2);
// Q4_K mins against the 16 bsums: bsum g pairs with min g / 2.
alignas(64) inline constexpr auto kQ4KMinIndex = make_scale_index(4, kQKK);

// A chunk of blocks' integer sums (per activation row) and weight scales as
// floats, between the integer and the float half of a kernel.
inline constexpr size_t kChunkBlocks = 64;
inline constexpr size_t kPad = 16;  // room for whole vectors past the last block
// A block's sums are stored at sums[b * slots + i], with `slots` the number
// of its sums (n_x, or 2 n_x for Q4_K: scaled then mins) rounded up to a power
// of two, so the SIMD code can reduce several blocks' vectors together.
constexpr size_t sum_slots(int sums) { return sums <= 1 ? 1 : sums <= 2 ? 2 : sums <= 4 ? 4 : sums <= 8 ? 8 : 16; }
// The activation scales the float halves take: xd[kXdStride * b + k] is
// activation row k's scale of block b.
inline constexpr size_t kXdStride = kDotTokensMax;
struct ChunkSums {
  int32_t sums[kChunkBlocks * sum_slots(2 * kDotTokensMax) + kPad];
  alignas(64) float w_d[kChunkBlocks + kPad];
  alignas(64) float w_dmin[kChunkBlocks + kPad];  // Q4_K
};

// Q4KBlockWide: the scale pair of each 32-bit lane of its four 64-element
// vectors (sub-blocks 2v and 2v + 1, one per half).
constexpr std::array<std::array<int32_t, 16>, 4> make_wide_scale_index() {
  std::array<std::array<int32_t, 16>, 4> t{};
  for (int v = 0; v < 4; ++v)
    for (int lane = 0; lane < 16; ++lane) t[v][lane] = 2 * v + lane / 8;
  return t;
}
alignas(64) inline constexpr auto kQ4KWideScaleIndex = make_wide_scale_index();

// Whether the AVX-512 targets multiply Q4_K blocks in 512-bit vectors (see
// Q4KBlockWide): by default on AMD CPUs, whose 512-bit units multiply as many
// vectors per cycle as their 256-bit ones; Intel's issue 512-bit multiplies on
// fewer ports and the shuffles the layout needs compete with the reductions.
inline bool q4k_wide = __builtin_cpu_is("amd");

}  // namespace pagoda::dot_tables
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant_dot.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// The x86 targets by what they may assume, as expressions re-evaluated in
// each of foreach_target's passes: AVX2 or better, AVX-512 (AVX3) or better,
// AVX-512 VNNI (AVX3_DL) or better. Highway 1.0.3 has nothing above AVX3_DL;
// later versions add AVX3_ZEN4 and AVX3_SPR, which must keep these kernels.
#define PAGODA_X86_AVX2 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2)
#define PAGODA_X86_AVX512 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
#define PAGODA_X86_VNNI512 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL)

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
// A software prefetch into L2 (prefetcht1): decode's streams of weight rows
// ran ~5% faster than with prefetches into L1 (a few more misses in flight).
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
  if constexpr (std::is_same_v<Block, BlockQ4_K>) HalfScales(wb + offsetof(BlockQ4_K, dmin), sizeof(Block), nb, out->w_dmin);
}
#define PAGODA_DOT_SCALAR(Name, Block, XBlock, block_dot)                                              \
  void Name(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, ChunkSums* out) {   \
    ScalarSums<Block, XBlock>(w, x, x_stride, n_x, nb, out,                                            \
                              [&](const Block& wb, const XBlock& xb, size_t i, size_t) { out->sums[i] = block_dot(wb, xb); }); \
  }
PAGODA_DOT_SCALAR(IntSumsQ4_0, BlockQ4_0, BlockQ8_0, block_dot_q4_0)
PAGODA_DOT_SCALAR(IntSumsQ5_0, BlockQ5_0, BlockQ8_0, block_dot_q5_0)
PAGODA_DOT_SCALAR(IntSumsQ8_0, BlockQ8_0, BlockQ8_0, block_dot_q8_0)
PAGODA_DOT_SCALAR(IntSumsQ6K, BlockQ6_K, BlockQ8_K, block_dot_q6_k)
#undef PAGODA_DOT_SCALAR
void IntSumsQ4K(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, ChunkSums* out) {
  ScalarSums<BlockQ4_K, BlockQ8_K>(w, x, x_stride, n_x, nb, out, [&](const BlockQ4_K& wb, const BlockQ8_K& xb, size_t i, size_t j) {
    block_dot_q4_k(wb, xb, out->sums[i], out->sums[j]);
  });
}
#else

#if PAGODA_X86_AVX512
#define PAGODA_DOT_X86 1
#define PAGODA_DOT_WIDE 1  // 64-byte vectors
#elif PAGODA_X86_AVX2
#define PAGODA_DOT_X86 1
#define PAGODA_DOT_WIDE 0
#else
#define PAGODA_DOT_X86 0
#define PAGODA_DOT_WIDE 0
#endif

// Vectors of at most kBytes: 64 on AVX-512, 32 elsewhere (the generic code
// paths assume a vector never spans more than one 32-element group).
constexpr size_t kBytes = PAGODA_DOT_WIDE ? 64 : 32;
using DU8 = hn::CappedTag<uint8_t, kBytes>;
using DI8 = hn::CappedTag<int8_t, kBytes>;
using DI16 = hn::CappedTag<int16_t, kBytes / 2>;
using DI32 = hn::CappedTag<int32_t, kBytes / 4>;

// ---------------------------------------------------------------- primitives

// Sum of adjacent pairs of products a[i] * b[i] (a unsigned, b signed) as
// 16-bit lanes. The callers keep every pair sum within int16.
#if PAGODA_DOT_X86
#if PAGODA_DOT_WIDE
HWY_INLINE hn::Vec512<int16_t> MulPairs(hn::Vec512<uint8_t> a, hn::Vec512<int8_t> b) {
  return hn::Vec512<int16_t>{_mm512_maddubs_epi16(a.raw, b.raw)};
}
#endif
HWY_INLINE hn::Vec256<int16_t> MulPairs(hn::Vec256<uint8_t> a, hn::Vec256<int8_t> b) {
  return hn::Vec256<int16_t>{_mm256_maddubs_epi16(a.raw, b.raw)};
}
#else
template <class VU8, class VI8>
HWY_INLINE auto MulPairs(VU8 a, VI8 b) {
  const hn::DFromV<VI8> d8;
  const hn::RepartitionToWide<decltype(d8)> d16;
  const hn::RebindToUnsigned<decltype(d16)> du16;
  const auto a_even = hn::BitCast(d16, hn::And(hn::BitCast(du16, a), hn::Set(du16, 0xFF)));
  const auto a_odd = hn::BitCast(d16, hn::ShiftRight<8>(hn::BitCast(du16, a)));
  const auto b_even = hn::ShiftRight<8>(hn::ShiftLeft<8>(hn::BitCast(d16, b)));  // sign-extends
  const auto b_odd = hn::ShiftRight<8>(hn::BitCast(d16, b));
  return hn::Add(hn::Mul(a_even, b_even), hn::Mul(a_odd, b_odd));
}
#endif

// acc += pairwise a[i] * b[i] widened to 32 bits (the pair order within
// the 32-bit lanes is unspecified off x86; only the lanes' total matters).
template <class D32, class V16>
HWY_INLINE hn::Vec<D32> MulAddWide(D32 d32, V16 a, V16 b, hn::Vec<D32> acc, hn::Vec<D32>& acc2) {
#if PAGODA_X86_VNNI512
  // vpdpwssd: the multiply-add in one instruction. Highway 1.0.3 compiles
  // AVX3_DL without the avx512vnni attribute (so no intrinsic), but the
  // target requires the CPU to have it.
  asm("vpdpwssd %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
  return acc;
#endif
  return hn::ReorderWidenMulAccumulate(d32, a, b, acc, acc2);
}

#if PAGODA_X86_VNNI512
// acc += the sums of groups of four products a[i] * b[i] (a unsigned, b
// signed) in each 32-bit lane: vpdpbusd, by asm as vpdpwssd above. Exact for
// any bytes (4 * 255 * 128 is far below 2^31).
template <class V32, class VU8, class VI8>
HWY_INLINE V32 MulAddQuads(V32 acc, VU8 a, VI8 b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
  return acc;
}
#endif

template <class D32>
HWY_INLINE int32_t ReduceSum(D32 d32, hn::Vec<D32> v) {
  return hn::GetLane(hn::SumOfLanes(d32, v));
}

// out[i] = the sum of the lanes of v[i] for i < M (a power of two): pairs
// of vectors are folded into one (each keeping half its lanes' sums), then
// the survivor folds onto itself; far fewer shuffles than M reductions.
// Writes max(M, lanes) values (the ones past M are junk).
template <size_t M, class D32>
HWY_INLINE void SumEach(D32 d32, hn::Vec<D32>* v, int32_t* out) {
  constexpr size_t N = hn::MaxLanes(D32());
  if constexpr (M == 1 || N == 1) {
    for (size_t i = 0; i < M; ++i) out[i] = ReduceSum(d32, v[i]);
  } else if constexpr (M > N) {  // a whole vector of sums at a time
    for (size_t i = 0; i < M; i += N) SumEach<N>(d32, v + i, out + i);
  } else {
    for (size_t m = M; m > 1; m /= 2)
      for (size_t i = 0; i < m / 2; ++i)
        v[i] = hn::Add(hn::ConcatEven(d32, v[2 * i + 1], v[2 * i]), hn::ConcatOdd(d32, v[2 * i + 1], v[2 * i]));
    auto r = v[0];
    for (size_t group = N / M; group > 1; group /= 2) r = hn::Add(hn::ConcatEven(d32, r, r), hn::ConcatOdd(d32, r, r));
    hn::StoreU(r, d32, out);
  }
}

// Runs body(b, slots) for every block b < nb, which sets the block's kSlots
// vectors of 32-bit partial sums, and writes every block's kSlots sums to
// out in block order, reducing a group of blocks at a time (as many as one
// vector has lanes for). The blocks of a group are unrolled so their slot
// vectors stay in registers. Zeroes kPad ints after the last block's sums
// (the float half reads whole vectors there).
// The vectors are of D32 (full width unless a kernel asks for less).
template <size_t kSlots, class D32 = DI32, class Body>
HWY_INLINE void ForBlockGroups(size_t nb, int32_t* out, const Body& body) {
  constexpr size_t kLanes = hn::MaxLanes(D32());
  constexpr size_t kGroup = kSlots >= kLanes ? 1 : kLanes / kSlots;
  for (size_t b0 = 0; b0 < nb; b0 += kGroup) {
    hn::Vec<D32> v[kGroup * kSlots];
#pragma GCC unroll 16
    for (size_t g = 0; g < kGroup; ++g) {
      if (b0 + g < nb) {
        body(b0 + g, v + g * kSlots);
      } else {
        for (size_t i = 0; i < kSlots; ++i) v[g * kSlots + i] = hn::Zero(D32());
      }
    }
    SumEach<kGroup * kSlots>(D32(), v, out + b0 * kSlots);
  }
  std::memset(out + nb * kSlots, 0, dot_tables::kPad * sizeof(int32_t));
}

// A vector of 32-bit sums as a full-width one (zero above): the 16 bsums'
// products, and the 32-element blocks' sums, are half-width on AVX-512.
template <class V>
HWY_INLINE hn::Vec<DI32> Widen(V v) {
  if constexpr (sizeof(V) == sizeof(hn::Vec<DI32>)) {
    return v;
  } else {
    return hn::ZeroExtendVector(DI32(), v);
  }
}

template <class V>
HWY_INLINE V LowNibbles(V v) {
  return hn::And(v, hn::Set(hn::DFromV<V>(), 0xF));
}

// ------------------------------------------------- 32-element block formats
//
// One block at a time (32 codes; two 16-byte halves off x86): codes are
// decoded once and multiplied with every activation row. Each format's codes
// are offset (Q4_0 c - 8, Q5_0 c - 16): the kernels multiply the unsigned
// codes and subtract offset * (sum of the activations) in the same 16-bit
// lanes, which stays exact.

#if PAGODA_DOT_X86
using DB8 = hn::CappedTag<uint8_t, 32>;  // one whole block per vector
#else
using DB8 = hn::CappedTag<uint8_t, 16>;  // half a block (or less) per vector
#endif
using DBI8 = hn::Repartition<int8_t, DB8>;
using DB16 = hn::Repartition<int16_t, DB8>;
using DB32 = hn::Repartition<int32_t, DB8>;

// Codes of elements o .. o+N-1 of a Q4_0/Q5_0 block from its 16 nibble bytes.
HWY_INLINE hn::Vec<DB8> NibbleCodes(const uint8_t* qs, size_t o) {
  const DB8 d;
#if PAGODA_DOT_X86
  const hn::Half<DB8> dh;
  const auto q = hn::LoadU(dh, qs);
  return hn::Combine(d, hn::ShiftRight<4>(q), LowNibbles(q));
#else
  return o < 16 ? LowNibbles(hn::LoadU(d, qs + o)) : hn::ShiftRight<4>(hn::LoadU(d, qs + o - 16));
#endif
}

enum class Legacy { kQ4_0, kQ5_0, kQ8_0 };

#if PAGODA_X86_VNNI512
// For vpdpbusd (unsigned times signed bytes): a block's 32 codes as unsigned
// bytes, value = code - kCodeOffset: Q4_0 c - 8, Q5_0 c - 16, and Q8_0
// (w + 128) - 128, its bytes' top bit flipped.
template <Legacy kFormat>
inline constexpr uint8_t kCodeOffset = kFormat == Legacy::kQ8_0 ? 128 : kFormat == Legacy::kQ5_0 ? 16 : 8;

template <Legacy kFormat, class Block>
HWY_INLINE hn::Vec<DB8> UnsignedCodes(const Block& w) {
  const DB8 du8;
  if constexpr (kFormat == Legacy::kQ8_0) {
    return hn::Xor(hn::LoadU(du8, reinterpret_cast<const uint8_t*>(w.qs)), hn::Set(du8, 0x80));
  } else if constexpr (kFormat == Legacy::kQ5_0) {
    uint32_t fifth;  // bit i: code i's fifth bit (worth 16)
    std::memcpy(&fifth, w.qh, 4);
    return hn::Or(NibbleCodes(w.qs, 0), hn::Vec<DB8>{_mm256_maskz_mov_epi8(_cvtu32_mask32(fifth), _mm256_set1_epi8(16))});
  } else {
    return NibbleCodes(w.qs, 0);
  }
}

// 8 vectors of 512 bits into one by pairwise folds (as in SumEach): lane
// 2 i + h of the result is the sum of half h (8 lanes) of v[i].
HWY_INLINE hn::Vec512<int32_t> FoldHalves(hn::Vec512<int32_t>* v) {
  const hn::Full512<int32_t> d32;
#pragma GCC unroll 4
  for (size_t m = 8; m > 1; m /= 2)
#pragma GCC unroll 4
    for (size_t i = 0; i < m / 2; ++i)
      v[i] = hn::Add(hn::ConcatEven(d32, v[2 * i + 1], v[2 * i]), hn::ConcatOdd(d32, v[2 * i + 1], v[2 * i]));
  return v[0];
}

// Legacy blocks of one weight row against K >= 2 activation rows,
// lane-parallel: a 512-bit vector holds a block's codes in both halves
// against two activation rows' blocks (one vpdpbusd per 64 products), and the
// 8 vectors of a group of blocks fold into one vector of 16 sums, in the
// order AddTerms reads them (block, then activation row).
template <Legacy kFormat, int K, class Block>
void LegacyTileSums(const Block* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  constexpr size_t kSlots = dot_tables::sum_slots(K);  // 2, 4 or 8
  constexpr size_t kPairs = kSlots / 2;
  constexpr size_t kGroup = 8 / kPairs;  // blocks per fold
  const hn::Full512<int32_t> d32;
  const hn::Full512<uint8_t> du8;
  const BlockQ8_0* xs[kSlots];
  for (size_t k = 0; k < kSlots; ++k)  // rows past K repeat the last; AddTerms gives their lanes zero weight
    xs[k] = reinterpret_cast<const BlockQ8_0*>(x + std::min(k, size_t(K - 1)) * x_stride);
  const auto offsets = hn::Set(du8, kCodeOffset<kFormat>);
  // Blocks first .. first + kGroup - 1: wg against xg[k] (both from there on).
  auto group = [&](const Block* wg, const BlockQ8_0* const* xg, size_t first) HWY_ATTR {
    hn::Vec512<int32_t> v[8];
#pragma GCC unroll 8
    for (size_t g = 0; g < kGroup; ++g) {
      const __m256i c = UnsignedCodes<kFormat>(wg[g]).raw;
      const hn::Vec512<uint8_t> codes{_mm512_inserti64x4(_mm512_castsi256_si512(c), c, 1)};
#pragma GCC unroll 4
      for (size_t p = 0; p < kPairs; ++p) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg[2 * p][g].qs));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg[2 * p + 1][g].qs));
        const hn::Vec512<int8_t> xv{_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)};
        v[kPairs * g + p] = MulAddQuads(hn::Neg(MulAddQuads(hn::Zero(d32), offsets, xv)), codes, xv);
      }
    }
    hn::StoreU(FoldHalves(v), d32, out->sums + kSlots * first);
  };
  size_t b0 = 0;
  for (; b0 + kGroup <= nb; b0 += kGroup) {
    const BlockQ8_0* xg[kSlots];
    for (size_t k = 0; k < kSlots; ++k) xg[k] = xs[k] + b0;
    group(w + b0, xg, b0);
  }
  if (b0 < nb) {  // the last blocks, padded with zero blocks
    Block tail_w[kGroup] = {};
    BlockQ8_0 tail_x[kSlots][kGroup] = {};
    const BlockQ8_0* xg[kSlots];
    std::memcpy(tail_w, w + b0, (nb - b0) * sizeof(Block));
    for (size_t k = 0; k < kSlots; ++k) {
      std::memcpy(tail_x[k], xs[k] + b0, (nb - b0) * sizeof(BlockQ8_0));
      xg[k] = tail_x[k];
    }
    group(tail_w, xg, b0);
  }
  std::memset(out->sums + nb * kSlots, 0, dot_tables::kPad * sizeof(int32_t));
  HalfScales(reinterpret_cast<const uint8_t*>(w), sizeof(Block), nb, out->w_d);
}

// The 4 weight rows' running sums of a token group, 16 token lanes each: each
// block's term added in block order, as the scalar kernels' `sum +=`.
struct GroupSums {
  hn::Vec512<float> sum[kDotRowsMax];
  GroupSums() {
    for (auto& s : sum) s = hn::Zero(hn::Full512<float>());
  }
  HWY_INLINE void Add(int r, hn::Vec512<float> term) { sum[r] = hn::Add(sum[r], Opaque(term)); }
  void Store(float* out) const {
    for (int r = 0; r < kDotRowsMax; ++r) hn::StoreU(sum[r], hn::Full512<float>(), out + kGroupTokens * r);
  }
};

// The token groups' inner loop: acc[r] += the products of kQuads 4-code quads
// of row r's unsigned codes (at codes + r * row_stride) with the 16 tokens'
// quads at x (64 bytes each), every quad broadcast (a load) against one load
// of the tokens' quads shared by the R rows.
template <size_t kQuads, int R>
HWY_INLINE void QuadDots(const uint8_t* codes, size_t row_stride, const int8_t* x, hn::Vec512<int32_t>* acc) {
  const hn::Full512<int32_t> d32;
  const hn::Full512<uint8_t> du8;
  const hn::Full512<int8_t> di8;
#pragma GCC unroll 8
  for (size_t q = 0; q < kQuads; ++q) {
    const auto xv = hn::LoadU(di8, x + 64 * q);
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, codes + size_t(r) * row_stride + 4 * q, 4);
      acc[r] = MulAddQuads(acc[r], hn::BitCast(du8, hn::Set(d32, quad)), xv);
    }
  }
}

// token_group_dot's kernel: per block, each of 4 weight rows' unsigned codes
// in a stack buffer, each 4-code quad broadcast (a load) against the 16
// tokens' quads (one load for the 4 rows), offset * (the tokens' code sums)
// taken off, then the rows' 16 running sums d_w * d_x * s in float lanes.
// Rows w[r] (4 of them), outputs out[16 r + k].
template <Legacy kFormat, class Block>
void TokenGroupDotT(const Block* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  constexpr int kShift = kCodeOffset<kFormat> == 128 ? 7 : kCodeOffset<kFormat> == 16 ? 4 : 3;
  static_assert((1 << kShift) == kCodeOffset<kFormat>);
  GroupSums sums;
  // The codes of kAhead blocks at a time: loads right behind the stores of
  // the same bytes ran at half the speed (store forwarding), so a block's
  // codes are stored a few blocks before they are read.
  constexpr size_t kAhead = 4;
  alignas(32) uint8_t codes_ahead[kAhead][R][kQK];
  for (size_t b = 0; b < g.nb; ++b) {
    if (b % kAhead == 0)
      for (size_t a = 0; a < kAhead && b + a < g.nb; ++a)
        for (int r = 0; r < R; ++r) hn::Store(UnsignedCodes<kFormat>(w[r][b + a]), DB8(), codes_ahead[a][r]);
    const auto& codes = codes_ahead[b % kAhead];
    const int8_t* x = g.codes.data() + b * (kQK / 4) * 64;
    hn::Vec512<int32_t> acc[R];
    for (int r = 0; r < R; ++r) acc[r] = hn::Zero(d32);
    QuadDots<kQK / 4, R>(codes[0], kQK, x, acc);
    const auto offset_sums = hn::ShiftLeft<kShift>(hn::LoadU(d32, g.sums.data() + kGroupTokens * b));
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {
      const auto scale = Opaque(hn::Mul(hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].d))), xd));
      sums.Add(r, hn::Mul(scale, hn::ConvertTo(df, hn::Sub(acc[r], offset_sums))));
    }
  }
  sums.Store(out);
}
#endif

template <Legacy kFormat, int K, class Block>
void LegacySums(const Block* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const DB8 du8;
  const DBI8 di8;
  const DB16 d16;
  const DB32 d32;
#if PAGODA_X86_VNNI512
  if constexpr (K >= 2) return LegacyTileSums<kFormat, K>(w, x, x_stride, nb, out);
#endif
  [[maybe_unused]] const size_t N = hn::Lanes(du8);
  const BlockQ8_0* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_0*>(x + size_t(k) * x_stride);
  [[maybe_unused]] const auto ones = hn::Set(d16, 1);
  constexpr size_t kSlots = dot_tables::sum_slots(K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    hn::Vec<DB32> acc[K], acc2[K];
    for (int k = 0; k < K; ++k) acc[k] = acc2[k] = hn::Zero(d32);
#if PAGODA_X86_VNNI512
    // Four products per lane; offset * (the activations' quad sums) taken
    // off (acc2) at the end.
    const auto codes = UnsignedCodes<kFormat>(w[b]);
    const auto offsets = hn::Set(du8, kCodeOffset<kFormat>);
    for (int k = 0; k < K; ++k) {
      const auto xv = hn::LoadU(di8, xs[k][b].qs);
      acc[k] = MulAddQuads(acc[k], codes, xv);
      acc2[k] = hn::Neg(MulAddQuads(hn::Zero(d32), offsets, xv));
    }
#else
    for (size_t o = 0; o < size_t(kQK); o += N) {
      if constexpr (kFormat == Legacy::kQ8_0) {
        // Signed times signed: |w| times x carrying w's sign (|-128| = 128 as a byte).
        const auto wv = hn::LoadU(di8, w[b].qs + o);
        const auto a = hn::BitCast(du8, hn::Abs(wv));
        const auto negative = hn::Lt(wv, hn::Zero(di8));
        for (int k = 0; k < K; ++k) {
          const auto xv = hn::LoadU(di8, xs[k][b].qs + o);
          const auto p = MulPairs(a, hn::IfThenElse(negative, hn::Neg(xv), xv));
          acc[k] = MulAddWide(d32, p, ones, acc[k], acc2[k]);
        }
      } else {
        auto codes = NibbleCodes(w[b].qs, o);
        int offset = 8;
        if constexpr (kFormat == Legacy::kQ5_0) {
          const auto fifth = hn::LoadMaskBits(du8, w[b].qh + o / 8);
          codes = hn::Or(codes, hn::IfThenElseZero(fifth, hn::Set(du8, 16)));
          offset = 16;
        }
        const auto offset_codes = hn::Set(du8, uint8_t(offset));
        for (int k = 0; k < K; ++k) {
          const auto xv = hn::LoadU(di8, xs[k][b].qs + o);
          const auto p = hn::Sub(MulPairs(codes, xv), MulPairs(offset_codes, xv));
          acc[k] = MulAddWide(d32, p, ones, acc[k], acc2[k]);
        }
      }
    }
#endif
    for (size_t k = 0; k < kSlots; ++k) slot[k] = k < K ? Widen(hn::Add(acc[k], acc2[k])) : hn::Zero(DI32());
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w), sizeof(Block), nb, out->w_d);
}

// ------------------------------------------------------------------- Q4_K

// The six-bit scales (bytes 0..7) and mins (bytes 8..15) of a Q4_K block.
// Scalar on purpose: the vector ports are the kernels' bottleneck, the
// integer ones are idle.
HWY_INLINE void UnpackQ4KScaleBytes(const uint8_t* s, uint8_t* bytes) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  // See unpack_q4_k_scale: bytes 0-3 of each word are sub-blocks 0-3 / 4-7.
  const uint32_t sc_lo = w0 & 0x3F3F3F3F, m_lo = w1 & 0x3F3F3F3F;
  const uint32_t sc_hi = (w2 & 0x0F0F0F0F) | ((w0 >> 6) & 0x03030303) << 4;
  const uint32_t m_hi = ((w2 >> 4) & 0x0F0F0F0F) | ((w1 >> 6) & 0x03030303) << 4;
  // Two 8-byte stores, read back by 8-byte loads: store forwarding works
  // only when a load takes its bytes from a single store.
  const uint64_t sc = sc_lo | uint64_t(sc_hi) << 32, m = m_lo | uint64_t(m_hi) << 32;
  std::memcpy(bytes, &sc, 8);
  std::memcpy(bytes + 8, &m, 8);
}

#if PAGODA_DOT_X86
// x86, every target: 32-byte vectors. A 32-byte load of codes holds one
// sub-block in its low nibbles and the next in its high nibbles, in the
// activations' order, so each code vector needs no shuffle and has a single
// scale, which vpmaddwd / vpdpwssd take as a broadcast (sc, sc) pair of
// 16-bit lanes (a load, no shuffle either). 512-bit multiplies issue on two
// ports too (p0 and p5 on Sapphire Rapids), but the 64-byte layout needs its
// halves regrouped (128 elements per load) by shuffles on p5, which the
// reductions also use: measured 14% slower than this on the 4-token tiles.

using DQ8 = hn::CappedTag<uint8_t, 32>;
using DQI8 = hn::CappedTag<int8_t, 32>;
using DQ16 = hn::CappedTag<int16_t, 16>;
using DQ32 = hn::CappedTag<int32_t, 8>;

// out[j] = scale j and out[8 + j] = min j of a Q4_K block, each as the int32
// whose two 16-bit halves both hold it. The bytes are unpacked as
// UnpackQ4KScaleBytes does, in one 16-byte vector: two byte shuffles gather
// each output's low and top bits (reading 4 bytes past the scales, inside
// the block), masks and shifts put them in place.
HWY_INLINE void Q4KScalePairs(const uint8_t* s, int32_t* out) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  // Low bits: bytes 0-3 (scales 0-3), 8-11 (scales 4-7), 4-7 (mins 0-3), 8-11 (mins 4-7).
  const __m128i low = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  // Top two bits of scales 4-7 and mins 4-7: bits 6-7 of bytes 0-3 and 4-7.
  const __m128i top = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i six = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i high_nibble = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i bytes = _mm_or_si128(
      _mm_or_si128(_mm_and_si128(low, six), _mm_and_si128(_mm_srli_epi16(low, 4), high_nibble)),
      _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(top, 6), _mm_set1_epi8(3)), 4));
  const __m256i sc = _mm256_cvtepu8_epi32(bytes), m = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), _mm256_or_si256(m, _mm256_slli_epi32(m, 16)));
}

// Block b of weight row w against activation rows xs[0..K-1]: slot[k] gets
// row k's partial sums of sum_j sc_j <q, x_k>_j (the scalar kernel's
// `scaled`), slot[K + k] those of sum_j m_j bsum_j (its `mins`).
// `pairs` holds the block's Q4KScalePairs.
template <int K>
HWY_INLINE void Q4KBlock(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                         hn::Vec<DQ32>* slot) {
  const DQ8 du8;
  const DQI8 di8;
  const DQ16 d16;
  const DQ32 d32;
  // Low and high nibbles accumulate apart (two chains of multiply-adds per
  // row); acc2 takes what ReorderWidenMulAccumulate spills on some targets.
  hn::Vec<DQ32> acc[2][K], acc2[K];
  for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
  for (size_t g = 0; g < size_t(kQKK) / 64; ++g) {
    const auto q = hn::LoadU(du8, w.qs + 32 * g);
    const hn::Vec<DQ8> codes[2] = {LowNibbles(q), hn::ShiftRight<4>(q)};
    for (size_t h = 0; h < 2; ++h) {
      const auto scale = hn::BitCast(d16, hn::Set(d32, pairs[2 * g + h]));
      for (int k = 0; k < K; ++k)
        acc[h][k] = MulAddWide(d32, MulPairs(codes[h], hn::LoadU(di8, xs[k][b].qs + 64 * g + 32 * h)), scale,
                               acc[h][k], acc2[k]);
    }
  }
  // bsum g pairs with min g / 2.
  const auto mins = hn::BitCast(d16, hn::Load(d32, pairs + 8));
  for (int k = 0; k < K; ++k) {
    auto macc = hn::Zero(d32), macc2 = hn::Zero(d32);
    macc = MulAddWide(d32, hn::LoadU(d16, xs[k][b].bsums), mins, macc, macc2);
    slot[k] = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
    slot[K + k] = hn::Add(macc, macc2);
  }
}

#if PAGODA_DOT_WIDE
// acc += pairwise a[i] * b[i] widened to 32 bits, 512-bit vectors.
HWY_INLINE __m512i MulAddWide512(__m512i a, __m512i b, __m512i acc) {
#if PAGODA_X86_VNNI512
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));  // see MulAddWide
  return acc;
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// Q4KBlock in 512-bit vectors: a 64-byte load of codes holds 128 elements
// (sub-blocks 4g, 4g+2 in its low nibbles, 4g+1, 4g+3 in its high ones);
// two 128-bit-lane shuffles per load put them in the activations' order, and
// each 64-element vector takes two scales (one per half), picked from the
// block's pairs by a lane permute. Half the multiplies of Q4KBlock, plus four
// shuffles per 128 elements that every activation row shares.
template <int K>
HWY_INLINE void Q4KBlockWide(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                             hn::Vec<DQ32>* slot) {
  const DQ16 d16;
  const DQ32 d32;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // The 8 scale pairs (indices 0-7 only): one 32-byte load, as they were
  // stored (a 64-byte load over two stores would miss store forwarding).
  const __m512i pv = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs)));
  __m512i acc[K];
  for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (size_t g = 0; g < 2; ++g) {
    const __m512i q = _mm512_loadu_si512(w.qs + 64 * g);
    const __m512i lo = _mm512_and_si512(q, nibble), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
    const __m512i codes[2] = {_mm512_shuffle_i64x2(lo, hi, 0x44), _mm512_shuffle_i64x2(lo, hi, 0xEE)};
    const __m512i scales[2] = {_mm512_permutexvar_epi32(_mm512_load_si512(dot_tables::kQ4KWideScaleIndex[2 * g].data()), pv),
                               _mm512_permutexvar_epi32(_mm512_load_si512(dot_tables::kQ4KWideScaleIndex[2 * g + 1].data()), pv)};
    for (size_t h = 0; h < 2; ++h)
      for (int k = 0; k < K; ++k)
        acc[k] = MulAddWide512(_mm512_maddubs_epi16(codes[h], _mm512_loadu_si512(xs[k][b].qs + 128 * g + 64 * h)),
                               scales[h], acc[k]);
  }
  const auto mins = hn::BitCast(d16, hn::Load(d32, pairs + 8));
  for (int k = 0; k < K; ++k) {
    auto macc = hn::Zero(d32), macc2 = hn::Zero(d32);
    macc = MulAddWide(d32, hn::LoadU(d16, xs[k][b].bsums), mins, macc, macc2);
    slot[k] = hn::Vec<DQ32>{_mm256_add_epi32(_mm512_castsi512_si256(acc[k]), _mm512_extracti64x4_epi64(acc[k], 1))};
    slot[K + k] = hn::Add(macc, macc2);
  }
}
#endif

// The block kernel this CPU runs best (see dot_tables::q4k_wide).
template <int K>
HWY_INLINE void Q4KBlockBest(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                             hn::Vec<DQ32>* slot, bool wide) {
#if PAGODA_DOT_WIDE
  if (wide) return Q4KBlockWide<K>(w, pairs, xs, b, slot);
#endif
  (void)wide;
  Q4KBlock<K>(w, pairs, xs, b, slot);
}

// out[2 (k nb + b)] = sum_j sc_j <q, x_k>_j and out[... + 1] = sum_j m_j bsum_j
// of block b against activation row k: the scalar kernel's `scaled`, `mins`.
template <int K>
void Q4KSums(const BlockQ4_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(2 * K);
  const bool wide = dot_tables::q4k_wide;
  ForBlockGroups<kSlots, DQ32>(nb, out->sums, [&](size_t b, hn::Vec<DQ32>* slot) HWY_ATTR {
    alignas(64) int32_t pairs[16];
    Q4KScalePairs(w[b].scales, pairs);
    // Hide the stored pairs' values from the compiler, which would otherwise
    // extract each one with shuffles: reloaded, they are broadcast loads.
    asm("" : "+m"(pairs));
    Q4KBlockBest<K>(w[b], pairs, xs, b, slot, wide);
    for (size_t i = 2 * K; i < kSlots; ++i) slot[i] = hn::Zero(DQ32());
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, d), sizeof(BlockQ4_K), nb, out->w_d);
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, dmin), sizeof(BlockQ4_K), nb, out->w_dmin);
}

#if PAGODA_X86_VNNI512
// token_group_dot for Q4_K, 4 rows at a time as TokenGroupDotT: per
// super-block, each row's 256 codes unpacked to bytes in a stack buffer; each
// sub-block's quads broadcast against the 16 tokens' quads (vpdpbusd), then
// the exact `scaled` and `mins` of the scalar kernel as 16 token lanes
// (sub-block scale times sum; min times the tokens' 32-code sums), and its
// float expression in block order. 4 rows share each load of the tokens'
// quads: 2x the speed of one row at a time.
void TokenGroupDotQ4K(const BlockQ4_K* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  const hn::Full256<uint8_t> d8;
  constexpr size_t kSub = kQKK / kQK;  // 8 sub-blocks of 32
  GroupSums sums;
  alignas(64) uint8_t codes[R][kQKK];
  alignas(16) uint8_t sm[R][16];  // the 8 scales, then the 8 mins
  for (size_t b = 0; b < g.nb; ++b) {
    for (int r = 0; r < R; ++r) {
      for (size_t p = 0; p < kQKK / 64; ++p) {  // qs[32 p + i]: low nibble element 64 p + i, high 64 p + 32 + i
        const auto q = hn::LoadU(d8, w[r][b].qs + 32 * p);
        hn::Store(LowNibbles(q), d8, codes[r] + 64 * p);
        hn::Store(hn::ShiftRight<4>(q), d8, codes[r] + 64 * p + 32);
      }
      UnpackQ4KScaleBytes(w[r][b].scales, sm[r]);
    }
    const int8_t* x = g.codes.data() + b * (kQKK / 4) * 64;
    const int32_t* xsums = g.sums.data() + b * 2 * kSub * kGroupTokens;  // per 16 codes
    hn::Vec512<int32_t> scaled[R], mins[R];
    for (int r = 0; r < R; ++r) scaled[r] = mins[r] = hn::Zero(d32);
#pragma GCC unroll 2
    for (size_t j = 0; j < kSub; ++j) {
      hn::Vec512<int32_t> acc[R];
      for (int r = 0; r < R; ++r) acc[r] = hn::Zero(d32);
      QuadDots<kQK / 4, R>(codes[0] + kQK * j, kQKK, x + 64 * 8 * j, acc);
      const auto xs = hn::Add(hn::LoadU(d32, xsums + kGroupTokens * 2 * j), hn::LoadU(d32, xsums + kGroupTokens * (2 * j + 1)));
      for (int r = 0; r < R; ++r) {
        scaled[r] = hn::Add(scaled[r], hn::Mul(acc[r], hn::Set(d32, int32_t(sm[r][j]))));
        mins[r] = hn::Add(mins[r], hn::Mul(xs, hn::Set(d32, int32_t(sm[r][8 + j]))));
      }
    }
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q4_k_q8_k
      const auto a = Opaque(hn::Mul(hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].d))), hn::ConvertTo(df, scaled[r])));
      const auto m = Opaque(hn::Mul(hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].dmin))), hn::ConvertTo(df, mins[r])));
      sums.Add(r, hn::Mul(xd, Opaque(hn::Sub(a, m))));
    }
  }
  sums.Store(out);
}

// token_group_dot for Q6_K, as TokenGroupDotQ4K: each row's 256 six-bit
// codes unpacked to bytes, then per 16-code sub-block i the exact
// sc_i * (sum q x - 32 sum x) of the scalar kernel in 16 token lanes.
void TokenGroupDotQ6K(const BlockQ6_K* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  const hn::Full256<uint8_t> d8;
  const auto two_bits = hn::Set(d8, 3);
  GroupSums sums;
  alignas(64) uint8_t codes[R][kQKK];
  for (size_t b = 0; b < g.nb; ++b) {
    for (int r = 0; r < R; ++r)
      for (size_t h = 0; h < 2; ++h) {  // elements 128 h + l + 32 k, see block_dot_q6_k
        const auto lo = hn::LoadU(d8, w[r][b].ql + 64 * h), hi = hn::LoadU(d8, w[r][b].ql + 64 * h + 32);
        const auto qh = hn::LoadU(d8, w[r][b].qh + 32 * h);
        uint8_t* c = codes[r] + 128 * h;
        hn::Store(hn::Or(LowNibbles(lo), hn::ShiftLeft<4>(hn::And(qh, two_bits))), d8, c);
        hn::Store(hn::Or(LowNibbles(hi), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(qh), two_bits))), d8, c + 32);
        hn::Store(hn::Or(hn::ShiftRight<4>(lo), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(qh), two_bits))), d8, c + 64);
        hn::Store(hn::Or(hn::ShiftRight<4>(hi), hn::ShiftLeft<4>(hn::ShiftRight<6>(qh))), d8, c + 96);
      }
    const int8_t* x = g.codes.data() + b * (kQKK / 4) * 64;
    const int32_t* xsums = g.sums.data() + b * 16 * kGroupTokens;
    hn::Vec512<int32_t> scaled[R];
    for (int r = 0; r < R; ++r) scaled[r] = hn::Zero(d32);
#pragma GCC unroll 2
    for (size_t i = 0; i < 16; ++i) {
      hn::Vec512<int32_t> acc[R];
      const auto offset = hn::ShiftLeft<5>(hn::LoadU(d32, xsums + kGroupTokens * i));  // 32 * sum x
      for (int r = 0; r < R; ++r) acc[r] = hn::Neg(offset);
      QuadDots<4, R>(codes[0] + 16 * i, kQKK, x + 64 * 4 * i, acc);
      for (int r = 0; r < R; ++r) scaled[r] = hn::Add(scaled[r], hn::Mul(acc[r], hn::Set(d32, int32_t(w[r][b].scales[i]))));
    }
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {  // x.d * d * scaled, as vec_dot_q6_k_q8_k
      const auto scale = Opaque(hn::Mul(xd, hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].d)))));
      sums.Add(r, hn::Mul(scale, hn::ConvertTo(df, scaled[r])));
    }
  }
  sums.Store(out);
}
#endif

// One token (decode): n_w weight rows at w + r * w_stride against one
// activation row, over nb blocks; acc[r] += the rows' block terms. A block's
// sums for all rows are reduced together (one vector per block, the rows'
// scaled and mins sums interleaved), and the float half runs the rows'
// running sums as lanes of one vector, with the scalar kernel's expression
// d_x * (d_w * scaled - dmin_w * mins) in each. Several weight rows stream at
// once, which also keeps more memory reads in flight.
void RowsDotQ4K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd, float* acc,
                size_t ahead) {
  alignas(64) int32_t sums[kChunkBlocks * 8];
  alignas(64) uint32_t dm[kChunkBlocks * kDotRowsMax];  // per block and row: the F16 pair (d, dmin)
  const BlockQ8_K* xs[1] = {reinterpret_cast<const BlockQ8_K*>(x)};
  const BlockQ4_K* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)
    rows[r] = reinterpret_cast<const BlockQ4_K*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_w - 1)) * w_stride);
  // The scales of every block first, out of the main loop's dependency
  // chains (7% faster, weights in L2).
  alignas(64) int32_t pairs[kChunkBlocks][kDotRowsMax][16];
  const bool wide = dot_tables::q4k_wide;
  for (size_t b = 0; b < nb; ++b)
    for (int r = 0; r < n_w; ++r) Q4KScalePairs(rows[r][b].scales, pairs[b][r]);
  asm("" : "+m"(pairs));
  for (size_t b = 0; b < nb; ++b) {
    hn::Vec<DQ32> v[2 * kDotRowsMax];
#pragma GCC unroll 4
    for (int r = 0; r < kDotRowsMax; ++r) {
      if (r < n_w) {
        // Each row is read in a stream of rows (see matmul); fetch `ahead`
        // bytes on in that stream, which the hardware prefetcher alone does
        // too late (past the matrix's end is harmless: prefetches never fault).
        const uint8_t* ahead_p = reinterpret_cast<const uint8_t*>(rows[r] + b) + ahead;
        for (size_t line = 0; line < sizeof(BlockQ4_K); line += 64) PrefetchL2(ahead_p + line);
        Q4KBlockBest<1>(rows[r][b], pairs[b][r], xs, b, v + 2 * r, wide);
        std::memcpy(&dm[kDotRowsMax * b + r], &rows[r][b].d, 4);  // d, then dmin
      } else {
        v[2 * r] = v[2 * r + 1] = hn::Zero(DQ32());
        dm[kDotRowsMax * b + r] = 0;
      }
    }
    SumEach<2 * kDotRowsMax>(DQ32(), v, sums + 8 * b);
  }
  const hn::CappedTag<float, 8> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const hn::Repartition<uint64_t, decltype(df)> du64;
  alignas(32) float lanes[8] = {};  // row r's running sum in lane 2r
  for (int r = 0; r < n_w; ++r) lanes[2 * r] = acc[r];
  auto a = hn::Load(df, lanes);
  for (size_t b = 0; b < nb; ++b) {
    const auto scales = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(dm + kDotRowsMax * b)));
    const auto p = Opaque(hn::Mul(scales, hn::ConvertTo(df, hn::LoadU(di, sums + 8 * b))));  // d scaled, dmin mins
    const auto p_mins = hn::BitCast(df, hn::ShiftRight<32>(hn::BitCast(du64, p)));            // dmin mins in the even lanes
    a = hn::Add(a, Opaque(hn::Mul(hn::Set(df, xd[dot_tables::kXdStride * b]), hn::Sub(p, p_mins))));
  }
  hn::Store(a, df, lanes);
  for (int r = 0; r < n_w; ++r) acc[r] = lanes[2 * r];
}

#else  // PAGODA_DOT_X86

// The six-bit scales (lanes 0..7) and mins (lanes 8..15) of a Q4_K block,
// stored as 16-bit lanes for LoadDup128.
HWY_INLINE void UnpackQ4KScales(const uint8_t* s, int16_t* out) {
  alignas(16) uint8_t bytes[16];
  UnpackQ4KScaleBytes(s, bytes);
  const hn::CappedTag<int16_t, 8> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  for (size_t i = 0; i < 16; i += hn::Lanes(d16)) hn::Store(hn::PromoteTo(d16, hn::LoadU(d8, bytes + i)), d16, out + i);
}

// Codes (0..15) of elements e .. e+2N-1 of a Q4_K block as two vectors: per
// 64 elements, 32 bytes whose low nibbles are the first 32 and high nibbles
// the next 32.
HWY_INLINE void Q4KCodes(const uint8_t* qs, size_t e, hn::Vec<DU8>* codes) {
  const DU8 d;
  const size_t N = hn::Lanes(d);
  for (size_t h = 0; h < 2; ++h) {
    const size_t o = (e + h * N) % 64;
    const auto q = hn::LoadU(d, qs + (e + h * N) / 64 * 32 + o % 32);
    codes[h] = o < 32 ? LowNibbles(q) : hn::ShiftRight<4>(q);
  }
}

// out[2 (k nb + b)] = sum_j sc_j <q, x_k>_j and out[... + 1] = sum_j m_j bsum_j
// of block b against activation row k: the scalar kernel's `scaled`, `mins`.
template <int K>
void Q4KSums(const BlockQ4_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const DU8 du8;
  const DI8 di8;
  const DI16 d16;
  const DI32 d32;
  const hn::CappedTag<int16_t, 16> dm16;  // the 16 bsums
  const hn::Repartition<int32_t, decltype(dm16)> dm32;
  const hn::Repartition<uint8_t, decltype(dm16)> dm8;
  const size_t N = hn::Lanes(du8);
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(2 * K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    alignas(16) int16_t scales[16];
    UnpackQ4KScales(w[b].scales, scales);
    const auto sc = hn::LoadDup128(d16, scales);
    const auto mins = hn::LoadDup128(dm16, scales + 8);
    // Two accumulators per row (even and odd vectors) halve the chain of
    // dependent multiply-adds per block; acc2 takes what ReorderWiden-
    // MulAccumulate spills on some targets.
    hn::Vec<DI32> acc[2][K], acc2[K];
    for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
    for (size_t e = 0; e < size_t(kQKK); e += 2 * N) {
      hn::Vec<DU8> codes[2];
      Q4KCodes(w[b].qs, e, codes);
      for (size_t h = 0; h < 2; ++h) {
        const size_t eh = e + h * N;
        const auto scale = hn::BitCast(d16, hn::TableLookupBytes(sc, hn::LoadU(du8, dot_tables::kQ4KScaleIndex.data() + eh)));
        for (int k = 0; k < K; ++k)
          acc[h][k] = MulAddWide(d32, MulPairs(codes[h], hn::LoadU(di8, xs[k][b].qs + eh)), scale, acc[h][k], acc2[k]);
      }
    }
    constexpr size_t kMinSteps = 16 / hn::MaxLanes(dm16) > 0 ? 16 / hn::MaxLanes(dm16) : 1;
    hn::Vec<decltype(dm16)> m[kMinSteps];
    const size_t G = hn::Lanes(dm16);
    for (size_t g = 0; g < 16; g += G)
      m[g / G] = hn::BitCast(dm16, hn::TableLookupBytes(mins, hn::LoadU(dm8, dot_tables::kQ4KMinIndex.data() + 2 * g)));
    // Slot k: row k's scaled sum; slot K + k: its mins.
    for (int k = 0; k < K; ++k) {
      auto macc = hn::Zero(dm32), macc2 = hn::Zero(dm32);
      for (size_t g = 0; g < 16; g += G) macc = MulAddWide(dm32, hn::LoadU(dm16, xs[k][b].bsums + g), m[g / G], macc, macc2);
      slot[k] = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
      slot[K + k] = Widen(hn::Add(macc, macc2));
    }
    for (size_t i = 2 * K; i < kSlots; ++i) slot[i] = hn::Zero(d32);
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, d), sizeof(BlockQ4_K), nb, out->w_d);
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, dmin), sizeof(BlockQ4_K), nb, out->w_dmin);
}

#endif  // PAGODA_DOT_X86

// ------------------------------------------------------------------- Q6_K

template <int kShift, class V>
HWY_INLINE V TwoBits(V v) {
  return hn::And(hn::ShiftRight<kShift>(v), hn::Set(hn::DFromV<V>(), 3));
}

// Unsigned codes (0..63) of elements e .. e+N-1 of a Q6_K block (see q6_k_code).
HWY_INLINE hn::Vec<DU8> Q6KCodes(const BlockQ6_K& w, size_t e) {
  const DU8 d;
  const size_t h = e / 128;
#if PAGODA_DOT_WIDE
  // 64 elements: 32-element groups k = 2m and 2m+1 share ql's nibble half.
  const size_t m = (e / 64) % 2;
  const hn::Half<DU8> dh;
  const auto ql = hn::LoadU(d, w.ql + 64 * h);
  const auto qh = hn::LoadU(dh, w.qh + 32 * h);
  const auto low = m == 0 ? LowNibbles(ql) : hn::ShiftRight<4>(ql);
  const auto high = m == 0 ? hn::Combine(d, TwoBits<2>(qh), TwoBits<0>(qh)) : hn::Combine(d, TwoBits<6>(qh), TwoBits<4>(qh));
  return hn::Or(low, hn::ShiftLeft<4>(high));
#else
  const size_t r = e % 128, k = r / 32, l = r % 32;
  const auto ql = hn::LoadU(d, w.ql + 64 * h + l + 32 * (k & 1));
  const auto qh = hn::LoadU(d, w.qh + 32 * h + l);
  const auto low = k < 2 ? LowNibbles(ql) : hn::ShiftRight<4>(ql);
  const auto high = k == 0 ? TwoBits<0>(qh) : k == 1 ? TwoBits<2>(qh) : k == 2 ? TwoBits<4>(qh) : TwoBits<6>(qh);
  return hn::Or(low, hn::ShiftLeft<4>(high));
#endif
}

// out[k nb + b] = sum_j sc_j <q - 32, x_k>_j, the scalar kernel's `scaled`:
// computed as sum_j sc_j <q, x_k>_j - 32 sum_j sc_j bsum_j.
template <int K>
HWY_INLINE void Q6KBlock(const BlockQ6_K& w, const BlockQ8_K* const* xs, size_t b, hn::Vec<DI32>* slot) {
  const DU8 du8;
  const DI8 di8;
  const DI16 d16;
  const DI32 d32;
  const hn::CappedTag<int16_t, 16> dm16;
  const hn::Repartition<int32_t, decltype(dm16)> dm32;
  const hn::Rebind<int8_t, decltype(dm16)> dm8;
  const size_t N = hn::Lanes(du8);
  const hn::CappedTag<int16_t, 8> ds16;
  const hn::Rebind<int8_t, decltype(ds16)> ds8;
  alignas(16) int16_t scales[16];
  for (size_t i = 0; i < 16; i += hn::Lanes(ds16))
    hn::Store(hn::PromoteTo(ds16, hn::LoadU(ds8, w.scales + i)), ds16, scales + i);
  const hn::Vec<DI16> sc[2] = {hn::LoadDup128(d16, scales), hn::LoadDup128(d16, scales + 8)};
  hn::Vec<DI32> acc[2][K], acc2[K];  // even and odd vectors, as in Q4KSums
  for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
  for (size_t e = 0; e < size_t(kQKK); e += N) {
    const size_t h = (e / N) % 2;
    const auto codes = Q6KCodes(w, e);
    const auto scale = hn::BitCast(d16, hn::TableLookupBytes(sc[e / 128], hn::LoadU(du8, dot_tables::kQ6KScaleIndex.data() + e)));
    for (int k = 0; k < K; ++k)
      acc[h][k] = MulAddWide(d32, MulPairs(codes, hn::LoadU(di8, xs[k][b].qs + e)), scale, acc[h][k], acc2[k]);
  }
  for (int k = 0; k < K; ++k) {
    auto oacc = hn::Zero(dm32), oacc2 = hn::Zero(dm32);
    for (size_t g = 0; g < 16; g += hn::Lanes(dm16))
      oacc = MulAddWide(dm32, hn::LoadU(dm16, xs[k][b].bsums + g), hn::PromoteTo(dm16, hn::LoadU(dm8, w.scales + g)),
                        oacc, oacc2);
    const auto codes_x = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
    slot[k] = hn::Sub(codes_x, hn::ShiftLeft<5>(Widen(hn::Add(oacc, oacc2))));
  }
}

template <int K>
void Q6KSums(const BlockQ6_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    Q6KBlock<K>(w[b], xs, b, slot);
    for (size_t i = K; i < kSlots; ++i) slot[i] = hn::Zero(DI32());
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ6_K, d), sizeof(BlockQ6_K), nb, out->w_d);
}

// One token (decode) against n_w weight rows, as RowsDotQ4K: the rows' block
// sums reduced together, their running sums the lanes of one vector, each
// with the scalar kernel's d_x * d_w * scaled.
void RowsDotQ6K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd, float* acc,
                size_t ahead) {
  constexpr size_t kOut = HWY_MAX(hn::MaxLanes(DI32()), size_t(kDotRowsMax));  // SumEach writes whole vectors
  alignas(64) int32_t sums[kChunkBlocks * kDotRowsMax + kOut];
  alignas(64) uint16_t d[kChunkBlocks * kDotRowsMax];  // per block and row: the F16 d
  const BlockQ8_K* xs[1] = {reinterpret_cast<const BlockQ8_K*>(x)};
  const BlockQ6_K* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)
    rows[r] = reinterpret_cast<const BlockQ6_K*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_w - 1)) * w_stride);
  for (size_t b = 0; b < nb; ++b) {
    hn::Vec<DI32> v[kDotRowsMax];
#pragma GCC unroll 4
    for (int r = 0; r < kDotRowsMax; ++r) {
      if (r < n_w) {
        // Fetch ahead in software, as in RowsDotQ4K.
        const uint8_t* ahead_p = reinterpret_cast<const uint8_t*>(rows[r] + b) + ahead;
        for (size_t line = 0; line < sizeof(BlockQ6_K); line += 64) PrefetchL2(ahead_p + line);
        Q6KBlock<1>(rows[r][b], xs, b, v + r);
        std::memcpy(&d[kDotRowsMax * b + r], &rows[r][b].d, 2);
      } else {
        v[r] = hn::Zero(DI32());
        d[kDotRowsMax * b + r] = 0;
      }
    }
    SumEach<kDotRowsMax>(DI32(), v, sums + kDotRowsMax * b);
  }
  const hn::CappedTag<float, kDotRowsMax> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  alignas(16) float lanes[kDotRowsMax] = {};
  for (int r = 0; r < n_w; ++r) lanes[r] = acc[r];
  auto a = hn::Load(df, lanes);
  for (size_t b = 0; b < nb; ++b) {
    const auto wd = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(d + kDotRowsMax * b)));
    const auto s = hn::ConvertTo(df, hn::LoadU(di, sums + kDotRowsMax * b));
    a = hn::Add(a, Opaque(hn::Mul(hn::Mul(hn::Set(df, xd[dot_tables::kXdStride * b]), wd), s)));
  }
  hn::Store(a, df, lanes);
  for (int r = 0; r < n_w; ++r) acc[r] = lanes[r];
}

#if PAGODA_X86_VNNI512
// One token (decode) against n_w Q4_0 / Q5_0 / Q8_0 weight rows,
// lane-parallel: a 512-bit vector holds one block's codes of two rows (256
// bits each, see UnsignedCodes) against the block's activations in both
// halves, so one vpdpbusd covers 64 codes, and the 8
// vectors of 4 blocks x 4 rows fold into one vector of their 16 block sums
// (lane 4 g + r: block g, row r), 1.3 shuffle-adds per block and row. The
// float half then adds d_w * d_x * sum block by block, the rows as 4 lanes.
// Two passes per chunk: the scales (the rows' and the activations') are
// gathered by scalar stores in the first and read as vectors, converted from
// F16 there, in the second, after the stores have landed. (It needs no xd:
// converting those for every call of 4 rows cost more than the float half.)
template <Legacy kFormat, class Block>
void RowsDotLegacy(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, float* acc, size_t ahead) {
  constexpr size_t kGroup = 4;  // blocks per fold: kGroup x kDotRowsMax sums, one vector
  static_assert(kGroup * kDotRowsMax == 16);
  const hn::Full512<int32_t> d32;
  const hn::Full512<uint8_t> du8;
  const hn::Full512<int8_t> di8;
  alignas(64) int32_t sums[(kChunkBlocks + kGroup) * kDotRowsMax];
  alignas(64) uint16_t d[(kChunkBlocks + kGroup) * kDotRowsMax];   // per block and row: the F16 d
  alignas(64) uint16_t dx[(kChunkBlocks + kGroup) * kDotRowsMax];  // the activations' d, once per row
  const auto* xs = reinterpret_cast<const BlockQ8_0*>(x);
  const Block* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)  // rows past n_w repeat the last; their lanes are dropped
    rows[r] = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_w - 1)) * w_stride);
  const auto offsets = hn::Set(du8, kCodeOffset<kFormat>);
  // Blocks b0 .. b0 + kGroup - 1 of rows w[r] against x (both from block 0).
  auto group = [&](const Block* const* wr, const BlockQ8_0* xr, size_t first) HWY_ATTR {
    hn::Vec512<int32_t> v[2 * kGroup];
#pragma GCC unroll 4
    for (size_t g = 0; g < kGroup; ++g) {
      const hn::Vec512<int8_t> xv{_mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[g].qs)))};
      const auto minus_offset = hn::Neg(MulAddQuads(hn::Zero(d32), offsets, xv));
      for (int p = 0; p < 2; ++p) {
        const __m256i lo = UnsignedCodes<kFormat>(wr[2 * p][g]).raw;
        const __m256i hi = UnsignedCodes<kFormat>(wr[2 * p + 1][g]).raw;
        const hn::Vec512<uint8_t> codes{_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)};
        v[2 * g + p] = MulAddQuads(minus_offset, codes, xv);
      }
      for (int r = 0; r < kDotRowsMax; ++r) {
        std::memcpy(&d[kDotRowsMax * (first + g) + r], &wr[r][g].d, 2);
        std::memcpy(&dx[kDotRowsMax * (first + g) + r], &xr[g].d, 2);
      }
    }
    hn::Store(FoldHalves(v), d32, sums + kDotRowsMax * first);
  };
  size_t b0 = 0;
  for (; b0 + kGroup <= nb; b0 += kGroup) {
    const Block* w_at[kDotRowsMax];
    for (int r = 0; r < kDotRowsMax; ++r) {
      w_at[r] = rows[r] + b0;
      const uint8_t* ahead_p = reinterpret_cast<const uint8_t*>(w_at[r]) + ahead;
      for (size_t line = 0; line < kGroup * sizeof(Block); line += 64) PrefetchL2(ahead_p + line);
    }
    group(w_at, xs + b0, b0);
  }
  if (b0 < nb) {  // the last blocks, padded with zero blocks
    Block tail[kDotRowsMax][kGroup] = {};
    BlockQ8_0 tail_x[kGroup] = {};
    const Block* w_at[kDotRowsMax];
    for (int r = 0; r < kDotRowsMax; ++r) {
      std::memcpy(tail[r], rows[r] + b0, (nb - b0) * sizeof(Block));
      w_at[r] = tail[r];
    }
    std::memcpy(tail_x, xs + b0, (nb - b0) * sizeof(BlockQ8_0));
    group(w_at, tail_x, b0);
  }
  const hn::CappedTag<float, kDotRowsMax> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  alignas(16) float lanes[kDotRowsMax] = {};
  for (int r = 0; r < n_w; ++r) lanes[r] = acc[r];
  auto a = hn::Load(df, lanes);
  for (size_t b = 0; b < nb; ++b) {  // d_w * d_x * s, as the scalar kernels
    const auto wd = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(d + kDotRowsMax * b)));
    const auto xd = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(dx + kDotRowsMax * b)));
    const auto s = hn::ConvertTo(df, hn::Load(di, sums + kDotRowsMax * b));
    a = hn::Add(a, Opaque(hn::Mul(hn::Mul(wd, xd), s)));
  }
  hn::Store(a, df, lanes);
  for (int r = 0; r < n_w; ++r) acc[r] = lanes[r];
}

#define PAGODA_ROWS_DOT(Name, kFormat, Block)                                                                   \
  void Name(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* /*xd*/, float* acc, \
            size_t ahead) {                                                                                     \
    RowsDotLegacy<kFormat, Block>(w, w_stride, n_w, x, nb, acc, ahead);                                          \
  }
PAGODA_ROWS_DOT(RowsDotQ4_0, Legacy::kQ4_0, BlockQ4_0)
PAGODA_ROWS_DOT(RowsDotQ5_0, Legacy::kQ5_0, BlockQ5_0)
PAGODA_ROWS_DOT(RowsDotQ8_0, Legacy::kQ8_0, BlockQ8_0)
#undef PAGODA_ROWS_DOT
#endif  // PAGODA_X86_VNNI512

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
#define PAGODA_DOT_ENTRY(Name, Kernel, Block, kTerms, kMaxK)                                             \
  void Name(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, const float* xd,      \
            float* acc) {                                                                                \
    ChunkSums c;                                                                                         \
    switch (n_x) {                                                                                       \
      case 1: Kernel<1>(static_cast<const Block*>(w), x, x_stride, nb, &c); return AddTerms<kTerms, 1>(c, nb, xd, acc); \
      case 2: Kernel<2>(static_cast<const Block*>(w), x, x_stride, nb, &c); return AddTerms<kTerms, 2>(c, nb, xd, acc); \
      case 3: Kernel<3>(static_cast<const Block*>(w), x, x_stride, nb, &c); return AddTerms<kTerms, 3>(c, nb, xd, acc); \
      case 4: Kernel<4>(static_cast<const Block*>(w), x, x_stride, nb, &c); return AddTerms<kTerms, 4>(c, nb, xd, acc); \
      default:                                                                                           \
        if constexpr (kMaxK == 8) {                                                                      \
          Kernel<8>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                  \
          return AddTerms<kTerms, 8>(c, nb, xd, acc);                                                    \
        }                                                                                                \
    }                                                                                                    \
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

// The largest n_x of each: Q6_K's 8-row kernel was 40% slower than two
// 4-row calls (bench_quant_dot_bench, Zen 5), the others 17-25% faster.
PAGODA_DOT_ENTRY(RowDotsQ4_0, Q4_0Sums, BlockQ4_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(RowDotsQ5_0, Q5_0Sums, BlockQ5_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(RowDotsQ8_0, Q8_0Sums, BlockQ8_0, Terms::kLegacy, 8)
PAGODA_DOT_ENTRY(RowDotsQ4K, Q4KSums, BlockQ4_K, Terms::kQ4K, 8)
PAGODA_DOT_ENTRY(RowDotsQ6K, Q6KSums, BlockQ6_K, Terms::kQ6K, 4)
#undef PAGODA_DOT_ENTRY

#if !PAGODA_X86_AVX2
// Elsewhere one weight row at a time (the same results).
void RowsDotQ4K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd, float* acc,
                size_t /*ahead*/) {
  for (int r = 0; r < n_w; ++r) RowDotsQ4K(static_cast<const uint8_t*>(w) + size_t(r) * w_stride, x, 0, 1, nb, xd, acc + r);
}
#endif
#if !PAGODA_X86_VNNI512
// vpdpbusd is only assumed on AVX3_DL; elsewhere one weight row at a time,
// with the activations' scales (not passed in for these formats) as floats,
// each row's stream fetched `ahead` bytes on (1B decode on AVX2, alternating
// steps: 7-12% faster).
#define PAGODA_ROWS_DOT(Name, RowDots, Block)                                                                   \
  void Name(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* /*xd*/, float* acc, \
            size_t ahead) {                                                                                     \
    alignas(32) float xd[kChunkBlocks][dot_tables::kXdStride] = {};                                             \
    for (size_t b = 0; b < nb; ++b) xd[b][0] = HalfToFloat(x + b * sizeof(BlockQ8_0));                           \
    for (int r = 0; r < n_w; ++r) {                                                                             \
      const uint8_t* row = static_cast<const uint8_t*>(w) + size_t(r) * w_stride;                               \
      for (size_t line = 0; line < nb * sizeof(Block); line += 64) PrefetchL2(row + ahead + line);             \
      RowDots(row, x, 0, 1, nb, &xd[0][0], acc + r);                                                            \
    }                                                                                                           \
  }
PAGODA_ROWS_DOT(RowsDotQ4_0, RowDotsQ4_0, BlockQ4_0)
PAGODA_ROWS_DOT(RowsDotQ5_0, RowDotsQ5_0, BlockQ5_0)
PAGODA_ROWS_DOT(RowsDotQ8_0, RowDotsQ8_0, BlockQ8_0)
#undef PAGODA_ROWS_DOT
#endif
#if HWY_TARGET == HWY_SCALAR
void RowsDotQ6K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd, float* acc,
                size_t /*ahead*/) {
  for (int r = 0; r < n_w; ++r) RowDotsQ6K(static_cast<const uint8_t*>(w) + size_t(r) * w_stride, x, 0, 1, nb, xd, acc + r);
}
#endif

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

#if PAGODA_X86_VNNI512
template <class Block>
void RowPointers(const void* w, size_t w_stride, int n_rows, const Block** rows) {
  for (int r = 0; r < kDotRowsMax; ++r)  // rows past n_rows repeat the last; their outputs are dropped
    rows[r] = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_rows - 1)) * w_stride);
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
void TokenGroupDot(TensorType t, const void* w_rows, size_t w_stride, int n_rows, const TokenGroup& g, float* out_rows) {
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

HWY_EXPORT(RowDotsQ4_0);
HWY_EXPORT(RowDotsQ5_0);
HWY_EXPORT(RowDotsQ8_0);
HWY_EXPORT(RowDotsQ4K);
HWY_EXPORT(RowDotsQ6K);
HWY_EXPORT(RowsDotQ4K);
HWY_EXPORT(RowsDotQ6K);
HWY_EXPORT(RowsDotQ4_0);
HWY_EXPORT(RowsDotQ5_0);
HWY_EXPORT(RowsDotQ8_0);
HWY_EXPORT(TargetName);
HWY_EXPORT(TileTokens);
HWY_EXPORT(TokenGroupDot);
HWY_EXPORT(IsAvx512Vnni);
HWY_EXPORT(IsX86Avx2);

namespace {

using dot_tables::kChunkBlocks;

using RowDotsFn = void (*)(const void*, const uint8_t*, size_t, int, size_t, const float*, float*);
using RowsDotFn = void (*)(const void*, size_t, int, const uint8_t*, size_t, const float*, float*, size_t);

float activation_scale(const BlockQ8_0& x) { return f16_to_f32(x.d); }
float activation_scale(const BlockQ8_K& x) { return x.d; }

// Chunk by chunk of blocks: the activation rows' block scales as floats (the
// same for every weight row), then each weight row's running sums, for the
// activation rows in groups the kernels take (kMaxGroup: 8 or 4; then 4 and
// the rest).
template <class Block, class XBlock, int kMaxGroup = 8>
void dot_tile(RowDotsFn row_dots, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride, int n_x,
              size_t nb, float* out, size_t out_stride) {
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
void dot_rows(RowsDotFn rows_dot, const void* w, size_t w_stride, int n_w, const void* x, size_t nb, float* out) {
  float acc[kDotRowsMax] = {};
  alignas(32) float xd[kChunkBlocks][dot_tables::kXdStride] = {};
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (size_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
    const size_t cb = std::min(kChunkBlocks, nb - b0);
    const XBlock* xk = reinterpret_cast<const XBlock*>(xb) + b0;
    if constexpr (std::is_same_v<XBlock, BlockQ8_K>)  // the Q8_0 kernels read the F16 scales themselves
      for (size_t b = 0; b < cb; ++b) xd[b][0] = activation_scale(xk[b]);
    rows_dot(wb + b0 * sizeof(Block), w_stride, n_w, xb + b0 * sizeof(XBlock), cb, &xd[0][0], acc, kPrefetchRows * nb * sizeof(Block));
  }
  for (int r = 0; r < n_w; ++r) out[r] = acc[r];
}

}  // namespace

void vec_dot_tile(TensorType t, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride, int n_x,
                  size_t n, float* out, size_t out_stride) {
  if (n_w < 1 || n_w > kDotRowsMax || n_x < 1 || n_x > kDotTokensMax)
    fail<InvalidArgument>("vec_dot_tile takes 1 to {} weight rows and 1 to {} activation rows, not {} x {}", kDotRowsMax,
                          kDotTokensMax, n_w, n_x);
  switch (t) {
    case TensorType::Q4_0:
      if (n_x == 1 && n_w > 1) return dot_rows<BlockQ4_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowsDotQ4_0), w, w_stride, n_w, x, n / kQK, out);
      return dot_tile<BlockQ4_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowDotsQ4_0), w, w_stride, n_w, x, x_stride, n_x,
                                            n / kQK, out, out_stride);
    case TensorType::Q5_0:
      if (n_x == 1 && n_w > 1) return dot_rows<BlockQ5_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowsDotQ5_0), w, w_stride, n_w, x, n / kQK, out);
      return dot_tile<BlockQ5_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowDotsQ5_0), w, w_stride, n_w, x, x_stride, n_x,
                                            n / kQK, out, out_stride);
    case TensorType::Q8_0:
      if (n_x == 1 && n_w > 1) return dot_rows<BlockQ8_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowsDotQ8_0), w, w_stride, n_w, x, n / kQK, out);
      return dot_tile<BlockQ8_0, BlockQ8_0>(HWY_DYNAMIC_DISPATCH(RowDotsQ8_0), w, w_stride, n_w, x, x_stride, n_x,
                                            n / kQK, out, out_stride);
    case TensorType::Q4_K:
      if (n_x == 1 && n_w > 1) return dot_rows<BlockQ4_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(RowsDotQ4K), w, w_stride, n_w, x, n / kQKK, out);
      return dot_tile<BlockQ4_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(RowDotsQ4K), w, w_stride, n_w, x, x_stride, n_x,
                                            n / kQKK, out, out_stride);
    case TensorType::Q6_K:
      if (n_x == 1 && n_w > 1) return dot_rows<BlockQ6_K, BlockQ8_K>(HWY_DYNAMIC_DISPATCH(RowsDotQ6K), w, w_stride, n_w, x, n / kQKK, out);
      return dot_tile<BlockQ6_K, BlockQ8_K, 4>(HWY_DYNAMIC_DISPATCH(RowDotsQ6K), w, w_stride, n_w, x, x_stride, n_x,
                                            n / kQKK, out, out_stride);
    default:
      fail<Unsupported>("no quantized dot product for {}", tensor_type_name(t));
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
