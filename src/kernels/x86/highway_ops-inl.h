// The raw x86 operations of the Highway kernels (quant_dot*.h, attention.cpp),
// each behind a small named helper over Highway vectors, so the kernels read
// in Highway's idiom and every intrinsic and asm statement they rely on is
// here. Each is an operation Highway 1.0.3 lacks, or one it compiles to other
// instructions than the kernels were tuned with (src/kernels/README.md, "Raw
// intrinsics"). The hand-written panel kernels beside this file use
// intrinsics throughout and do not include it.
//
// A Highway per-target header: each foreach_target pass of a TU that includes
// it after hwy/highway.h compiles it again for that target (the toggle guard
// below), inside pagoda::HWY_NAMESPACE; a helper exists only on the targets
// that have its instruction (PAGODA_X86_*).
#if defined(PAGODA_KERNELS_X86_HIGHWAY_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PAGODA_KERNELS_X86_HIGHWAY_OPS_INL_H_
#undef PAGODA_KERNELS_X86_HIGHWAY_OPS_INL_H_
#else
#define PAGODA_KERNELS_X86_HIGHWAY_OPS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/quant_dot_tables.h"
#include "quant/blocks.h"

// The x86 targets by what they may assume, as expressions re-evaluated in
// each of foreach_target's passes: AVX2 or better, AVX-512 (AVX3) or better,
// AVX-512 VNNI (AVX3_DL) or better. Highway 1.0.3 has nothing above AVX3_DL;
// later versions add AVX3_ZEN4 and AVX3_SPR, which must keep these kernels.
#ifndef PAGODA_X86_AVX2
#define PAGODA_X86_AVX2 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2)
#define PAGODA_X86_AVX512 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
#define PAGODA_X86_VNNI512 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL)
#endif

HWY_BEFORE_NAMESPACE();
namespace pagoda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if PAGODA_X86_AVX2
// Sum of adjacent pairs of products a[i] * b[i] (a unsigned, b signed) as
// 16-bit lanes, saturating: vpmaddubsw. The callers keep every pair sum
// within int16. (Elsewhere: the portable MulPairs of quant_dot_common-inl.h.)
HWY_INLINE hn::Vec256<int16_t> MulPairs(hn::Vec256<uint8_t> a, hn::Vec256<int8_t> b) {
  return hn::Vec256<int16_t>{_mm256_maddubs_epi16(a.raw, b.raw)};
}

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
  const __m128i bytes =
      _mm_or_si128(_mm_or_si128(_mm_and_si128(low, six), _mm_and_si128(_mm_srli_epi16(low, 4), high_nibble)),
                   _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(top, 6), _mm_set1_epi8(3)), 4));
  const __m256i sc = _mm256_cvtepu8_epi32(bytes), m = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), _mm256_or_si256(m, _mm256_slli_epi32(m, 16)));
}
#endif  // PAGODA_X86_AVX2

#if PAGODA_X86_AVX512
// MulPairs in 512-bit vectors.
HWY_INLINE hn::Vec512<int16_t> MulPairs(hn::Vec512<uint8_t> a, hn::Vec512<int8_t> b) {
  return hn::Vec512<int16_t>{_mm512_maddubs_epi16(a.raw, b.raw)};
}

// lo in the lower 256 bits, hi in the upper: vinserti64x4 (Highway's Combine
// zero-extends lo first and inserts with vinserti32x8).
template <typename T>
HWY_INLINE hn::Vec512<T> Concat256(hn::Vec256<T> lo, hn::Vec256<T> hi) {
  return hn::Vec512<T>{_mm512_inserti64x4(_mm512_castsi256_si512(lo.raw), hi.raw, 1)};
}

// 32 bytes at p in both halves: vbroadcasti64x4 (Highway 1.0.3 has
// LoadDup128 only).
template <typename T>
HWY_INLINE hn::Vec512<T> LoadDup256(const T* p) {
  return hn::Vec512<T>{_mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}

// Byte i = value where bit i of mask is set, else 0: one zero-masked byte
// move (AVX-512 BW, VL; Highway 1.0.3 has no mask from bits).
HWY_INLINE hn::Vec256<uint8_t> BytesWhere(uint32_t mask, uint8_t value) {
  return hn::Vec256<uint8_t>{_mm256_maskz_mov_epi8(_cvtu32_mask32(mask), _mm256_set1_epi8(char(value)))};
}

// The even (0, 2) and the odd (1, 3) 128-bit blocks of a, then of b:
// vshuff32x4 (Highway 1.0.3 regroups lanes, not blocks, across vectors).
HWY_INLINE hn::Vec512<float> EvenBlocks(hn::Vec512<float> a, hn::Vec512<float> b) {
  return hn::Vec512<float>{_mm512_shuffle_f32x4(a.raw, b.raw, 0x88)};
}
HWY_INLINE hn::Vec512<float> OddBlocks(hn::Vec512<float> a, hn::Vec512<float> b) {
  return hn::Vec512<float>{_mm512_shuffle_f32x4(a.raw, b.raw, 0xDD)};
}

// acc += pairwise a[i] * b[i] widened to 32 bits, 512-bit vectors.
HWY_INLINE __m512i MulAddWide512(__m512i a, __m512i b, __m512i acc) {
#if PAGODA_X86_VNNI512
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));  // see MulAddPairsVnni
  return acc;
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// The scaled half of Q4KBlockWide (quant_dot_q4k-inl.h) for block b of a
// Q4_K row (codes qs, scale pairs from Q4KScalePairs) against activation
// rows xs[0..K-1]: acc[k] = partial sums of sum_j sc_j <q, x_k>_j. A 64-byte
// load of codes holds 128 elements (sub-blocks 4g, 4g+2 in its low nibbles,
// 4g+1, 4g+3 in its high ones); two 128-bit-lane shuffles per load put them
// in the activations' order, and each 64-element vector takes two scales
// (one per half), picked from the pairs by a lane permute.
template <int K>
HWY_INLINE void Q4KWideScaled(const uint8_t* qs, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                              hn::Vec512<int32_t>* acc) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // The 8 scale pairs (indices 0-7 only): one 32-byte load, as they were
  // stored (a 64-byte load over two stores would miss store forwarding).
  const __m512i pv = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs)));
  for (int k = 0; k < K; ++k) acc[k].raw = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (size_t g = 0; g < 2; ++g) {
    const __m512i q = _mm512_loadu_si512(qs + 64 * g);
    const __m512i lo = _mm512_and_si512(q, nibble), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
    const __m512i codes[2] = {_mm512_shuffle_i64x2(lo, hi, 0x44), _mm512_shuffle_i64x2(lo, hi, 0xEE)};
    const __m512i scales[2] = {
        _mm512_permutexvar_epi32(_mm512_load_si512(dot_tables::kQ4KWideScaleIndex[2 * g].data()), pv),
        _mm512_permutexvar_epi32(_mm512_load_si512(dot_tables::kQ4KWideScaleIndex[2 * g + 1].data()), pv)};
    for (size_t h = 0; h < 2; ++h)
      for (int k = 0; k < K; ++k)
        acc[k].raw = MulAddWide512(_mm512_maddubs_epi16(codes[h], _mm512_loadu_si512(xs[k][b].qs + 128 * g + 64 * h)),
                                   scales[h], acc[k].raw);
  }
}

// The lower plus the upper 256 bits: vextracti64x4 (Highway's UpperHalf
// uses vextracti32x8).
HWY_INLINE hn::Vec256<int32_t> AddHalves(hn::Vec512<int32_t> v) {
  return hn::Vec256<int32_t>{_mm256_add_epi32(_mm512_castsi512_si256(v.raw), _mm512_extracti64x4_epi64(v.raw, 1))};
}
#endif  // PAGODA_X86_AVX512

#if PAGODA_X86_VNNI512
// acc += pairwise a[i] * b[i] of 16-bit lanes, widened to 32 bits: vpdpwssd.
// Highway 1.0.3 compiles AVX3_DL without the avx512vnni attribute (so no
// intrinsic), but the target requires the CPU to have it.
template <class V32, class V16>
HWY_INLINE V32 MulAddPairsVnni(V32 acc, V16 a, V16 b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
  return acc;
}

// acc += the sums of groups of four products a[i] * b[i] (a unsigned, b
// signed) in each 32-bit lane: vpdpbusd, by asm as vpdpwssd above. Exact for
// any bytes (4 * 255 * 128 is far below 2^31).
template <class V32, class VU8, class VI8>
HWY_INLINE V32 MulAddQuads(V32 acc, VU8 a, VI8 b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
  return acc;
}
#endif  // PAGODA_X86_VNNI512

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#endif  // PAGODA_KERNELS_X86_HIGHWAY_OPS_INL_H_
