// The row-panel kernels (kernels/x86/panel_kernels-inl.h) for AVX2, used where the
// SIMD target is AVX2 or an AVX-512 one without VNNI: 8 32-bit lanes, so
// each 64-byte group of a panel is two halves, rows 0-7 and 8-15.
// vpmaddubsw and vpmaddwd take vpdpbusd's place; their int16 pair sums hold
// 4- to 6-bit codes times 8-bit activations, and Q8_0 goes as |w| times x
// with w's sign.
#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/panels.h"
#include "kernels/x86/panel_kernels.h"
#include "quant/blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace pagoda::panels_avx2 {
namespace {

#define PAGODA_PANEL_TARGET __attribute__((target("avx2,fma,f16c")))
#define PAGODA_OP PAGODA_PANEL_TARGET __attribute__((always_inline)) static inline

struct V {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8;
  static constexpr bool kVnni = false;
  static constexpr bool kQ8_0Offset = false;  // dot_q8_0 multiplies signed codes

  PAGODA_OP I load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // The same, kept in a register for several uses: the compiler would
  // otherwise fold the load into each use and read the bytes again.
  PAGODA_OP I load_reg(const uint8_t* p) {
    I v = load(p);
    asm("" : "+x"(v));
    return v;
  }
  PAGODA_OP I zero() { return _mm256_setzero_si256(); }
  PAGODA_OP I set8(char v) { return _mm256_set1_epi8(v); }
  PAGODA_OP I set32(int32_t v) { return _mm256_set1_epi32(v); }
  PAGODA_OP I bcast_quad(const int8_t* p) {
    int32_t q;
    std::memcpy(&q, p, 4);
    return _mm256_set1_epi32(q);
  }
  // The 16 bytes at p in both 128-bit halves (a byte-shuffle table).
  PAGODA_OP I bcast16(const uint8_t* p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // 8 uint16 values at p, zero-extended into the 32-bit lanes.
  PAGODA_OP I load_u16(const uint8_t* p) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // 8 bytes at p, zero-extended into the 32-bit lanes.
  PAGODA_OP I load_u8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  // Byte i of each half = table's byte (idx's byte i) of that half (idx bytes < 16).
  PAGODA_OP I shuffle8(I table, I idx) { return _mm256_shuffle_epi8(table, idx); }
  PAGODA_OP I and_(I a, I b) { return _mm256_and_si256(a, b); }
  PAGODA_OP I or_(I a, I b) { return _mm256_or_si256(a, b); }
  PAGODA_OP I srli16(I v, int n) { return _mm256_srli_epi16(v, n); }
  PAGODA_OP I slli16(I v, int n) { return _mm256_slli_epi16(v, n); }
  PAGODA_OP I srli32(I v, int n) { return _mm256_srli_epi32(v, n); }
  PAGODA_OP I slli32(I v, int n) { return _mm256_slli_epi32(v, n); }
  PAGODA_OP I srai32(I v, int n) { return _mm256_srai_epi32(v, n); }
  PAGODA_OP I add32(I a, I b) { return _mm256_add_epi32(a, b); }
  PAGODA_OP I sub32(I a, I b) { return _mm256_sub_epi32(a, b); }
  PAGODA_OP I mullo32(I a, I b) { return _mm256_mullo_epi32(a, b); }
  // acc + the sums of 4 products of unsigned u and signed s bytes, per lane;
  // exact while each pair of products fits int16 (vpmaddubsw saturates).
  PAGODA_OP I dot_u8s8(I acc, I u, I s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  // Q8_0's stored codes (+ 128) back to signed, then |w| times x with w's
  // sign: |w| <= 128, so a pair of products fits int16.
  PAGODA_OP I dot_q8_0(I acc, I stored, I s) {
    const I w = _mm256_xor_si256(stored, _mm256_set1_epi8(char(0x80)));
    return dot_u8s8(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(s, w));
  }
  // acc + the sums of 2 products of int16 pairs, per lane.
  PAGODA_OP I dot_i16(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }

  PAGODA_OP F zerof() { return _mm256_setzero_ps(); }
  PAGODA_OP F set1f(float v) { return _mm256_set1_ps(v); }
  PAGODA_OP F load_scales(const uint8_t* p) {  // 8 F16 values
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  PAGODA_OP F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  // 2^n for int32 lanes n (-252 .. 254; exact, subnormal below -126): the
  // product of 2^(n >> 1) and 2^(n - (n >> 1)), both normal floats built by
  // shifts (AVX2 has no vscalefps).
  PAGODA_OP F pow2(I n) {
    const I a = _mm256_srai_epi32(n, 1), b = _mm256_sub_epi32(n, a);
    const I bias = _mm256_set1_epi32(127);
    return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, bias), 23)),
                         _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, bias), 23)));
  }
  PAGODA_OP F add(F a, F b) { return _mm256_add_ps(a, b); }
  PAGODA_OP F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  PAGODA_OP F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  // p, hidden from the optimizer: a product and the sum it joins stay two roundings.
  PAGODA_OP F opaque(F p) {
    asm("" : "+x"(p));
    return p;
  }
  PAGODA_OP void store(float* p, F v) { _mm256_storeu_ps(p, v); }
};

}  // namespace

#include "kernels/x86/panel_kernels-inl.h"

#undef PAGODA_OP
#undef PAGODA_PANEL_TARGET

}  // namespace pagoda::panels_avx2

const pagoda::PanelKernels pagoda::kPanelKernelsAvx2 = {panels_avx2::has_kernels, panels_avx2::dot,
                                                        panels_avx2::streams};

#else  // not x86 with GCC or Clang: no kernels, panel_dot runs the reference

const pagoda::PanelKernels pagoda::kPanelKernelsAvx2 = {[](pagoda::TensorType) { return false; }, nullptr, nullptr};

#endif
