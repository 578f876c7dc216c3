// The row-panel kernels (kernels/x86/panel_kernels-inl.h) for AVX-512 VNNI: 16
// 32-bit lanes, one panel row each, so a 64-byte group of a panel is one
// vector, and vpdpbusd multiplies 4 codes of 16 rows by the same 4
// activation codes (a broadcast) into 32-bit sums. Compiled with a target
// attribute rather than Highway's per-target machinery (one target); run
// where Highway's dispatch chose AVX3_DL or better.
#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/panels.h"
#include "kernels/x86/panel_kernels.h"
#include "quant/blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12 warns inside its own headers: the conversions pass _mm512_undefined_ps()
// as the (unused) merge source.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagoda::panels_avx512 {
namespace {

#define PAGODA_PANEL_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define PAGODA_OP PAGODA_PANEL_TARGET __attribute__((always_inline)) static inline

struct V {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16;
  static constexpr bool kVnni = true;
  static constexpr bool kQ8_0Offset = true;  // vpdpbusd takes the stored unsigned codes

  PAGODA_OP I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  // The same, kept in a register for several uses: the compiler would
  // otherwise fold the load into each use and read the bytes again.
  PAGODA_OP I load_reg(const uint8_t* p) {
    I v = load(p);
    asm("" : "+v"(v));
    return v;
  }
  PAGODA_OP I zero() { return _mm512_setzero_si512(); }
  PAGODA_OP I set8(char v) { return _mm512_set1_epi8(v); }
  PAGODA_OP I set32(int32_t v) { return _mm512_set1_epi32(v); }
  PAGODA_OP I bcast_quad(const int8_t* p) {
    int32_t q;
    std::memcpy(&q, p, 4);
    return _mm512_set1_epi32(q);
  }
  // The 16 bytes at p in every 128-bit block (a byte-shuffle table).
  PAGODA_OP I bcast16(const uint8_t* p) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // 16 uint16 values at p, zero-extended into the 32-bit lanes.
  PAGODA_OP I load_u16(const uint8_t* p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // 16 bytes at p, zero-extended into the 32-bit lanes.
  PAGODA_OP I load_u8(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // Byte i of each 128-bit block = table's byte (idx's byte i) of that block (idx bytes < 16).
  PAGODA_OP I shuffle8(I table, I idx) { return _mm512_shuffle_epi8(table, idx); }
  PAGODA_OP I and_(I a, I b) { return _mm512_and_si512(a, b); }
  PAGODA_OP I or_(I a, I b) { return _mm512_or_si512(a, b); }
  PAGODA_OP I srli16(I v, int n) { return _mm512_srli_epi16(v, n); }
  PAGODA_OP I slli16(I v, int n) { return _mm512_slli_epi16(v, n); }
  PAGODA_OP I srli32(I v, int n) { return _mm512_srli_epi32(v, n); }
  PAGODA_OP I slli32(I v, int n) { return _mm512_slli_epi32(v, n); }
  PAGODA_OP I srai32(I v, int n) { return _mm512_srai_epi32(v, n); }
  PAGODA_OP I add32(I a, I b) { return _mm512_add_epi32(a, b); }
  PAGODA_OP I sub32(I a, I b) { return _mm512_sub_epi32(a, b); }
  PAGODA_OP I mullo32(I a, I b) { return _mm512_mullo_epi32(a, b); }
  // acc + the sums of 4 products of unsigned u and signed s bytes, per lane.
  PAGODA_OP I dot_u8s8(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  PAGODA_OP I dot_q8_0(I acc, I stored, I s) { return _mm512_dpbusd_epi32(acc, stored, s); }
  // acc + the sums of 2 products of int16 pairs, per lane.
  PAGODA_OP I dot_i16(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }

  PAGODA_OP F zerof() { return _mm512_setzero_ps(); }
  PAGODA_OP F set1f(float v) { return _mm512_set1_ps(v); }
  PAGODA_OP F load_scales(const uint8_t* p) {  // 16 F16 values
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  PAGODA_OP F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  // 2^n for int32 lanes n (-149 .. 127: exact, subnormal below -126): vscalefps.
  PAGODA_OP F pow2(I n) { return _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(n)); }
  PAGODA_OP F add(F a, F b) { return _mm512_add_ps(a, b); }
  PAGODA_OP F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  PAGODA_OP F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  // p, hidden from the optimizer, so a product and the sum it joins stay two
  // roundings (the scalar kernel's), never one fused multiply-add.
  PAGODA_OP F opaque(F p) {
    asm("" : "+v"(p));
    return p;
  }
  PAGODA_OP void store(float* p, F v) { _mm512_storeu_ps(p, v); }
};

}  // namespace

#include "kernels/x86/panel_kernels-inl.h"

#undef PAGODA_OP
#undef PAGODA_PANEL_TARGET

}  // namespace pagoda::panels_avx512

const pagoda::PanelKernels pagoda::kPanelKernelsAvx512 = {panels_avx512::has_kernels, panels_avx512::dot,
                                                          panels_avx512::streams};

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#else  // not x86 with GCC or Clang: no kernels, panel_dot runs the reference

const pagoda::PanelKernels pagoda::kPanelKernelsAvx512 = {[](pagoda::TensorType) { return false; }, nullptr, nullptr};

#endif
