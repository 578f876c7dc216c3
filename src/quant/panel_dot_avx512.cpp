// The row-panel kernel for AVX-512 VNNI (quant/panels.h), and the run-time
// choice between it and the scalar reference. One target only, so it is
// compiled with a target attribute rather than through Highway's per-target
// machinery; it runs where Highway's dispatch chose AVX3_DL (AVX-512 VNNI).
#include <cstring>

#include "quant/blocks.h"
#include "quant/dot_simd.h"
#include "quant/panels.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAGODA_PANELS_AVX512 1
// GCC 12 warns inside its own headers: the conversions pass _mm512_undefined_ps()
// as the (unused) merge source.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#else
#define PAGODA_PANELS_AVX512 0
#endif

namespace pagoda {
namespace {

bool cpu_runs_panels() { return simd_target_is_avx512_vnni(); }

#if PAGODA_PANELS_AVX512
#define PAGODA_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// p, hidden from the optimizer, so a product and the sum it joins stay two
// roundings (the scalar kernel's), never one fused multiply-add.
PAGODA_VNNI inline __m512 opaque(__m512 p) {
  asm("" : "+v"(p));
  return p;
}

PAGODA_VNNI inline int32_t load_quad(const int8_t* p) {
  int32_t q;
  std::memcpy(&q, p, 4);
  return q;
}

// K tokens against one Q8_0 panel. Per block: the 16 rows' scales in one
// vector, 8 loads of 16 rows x 4 codes, each multiplied by every token's
// matching 4 activation codes (a broadcast) with vpdpbusd. With one or two
// tokens the 8 multiply-adds of a block run as two chains.
template <int K>
PAGODA_VNNI void PanelDotQ8_0(const uint8_t* panel, const PanelActivations& a, int first, float* out,
                              size_t out_stride) {
  constexpr int kChains = K <= 2 ? 2 : 1;
  constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ8_0);
  const BlockQ8_0* x[K];
  const float* xd[K];
  const int32_t* xo[K];
  for (int k = 0; k < K; ++k) {
    x[k] = reinterpret_cast<const BlockQ8_0*>(a.rows + size_t(first + k) * a.row_stride);
    xd[k] = a.scales.data() + size_t(first + k) * a.nb;
    xo[k] = a.offsets.data() + size_t(first + k) * a.nb;
  }
  __m512 acc[K];
  for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b) {
    const uint8_t* block = panel + b * kBlockBytes;
    __m512i s[kChains][K];
    for (int c = 0; c < kChains; ++c)
      for (int k = 0; k < K; ++k) s[c][k] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) {
      const __m512i w = _mm512_loadu_si512(block + 32 + 64 * q);
      for (int k = 0; k < K; ++k)
        s[q % kChains][k] = _mm512_dpbusd_epi32(s[q % kChains][k], w, _mm512_set1_epi32(load_quad(x[k][b].qs + 4 * q)));
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
    for (int k = 0; k < K; ++k) {
      __m512i sum = s[0][k];
      if constexpr (kChains == 2) sum = _mm512_add_epi32(sum, s[1][k]);
      sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(xo[k][b]));
      const __m512 p = _mm512_mul_ps(_mm512_mul_ps(wd, _mm512_set1_ps(xd[k][b])), _mm512_cvtepi32_ps(sum));
      acc[k] = _mm512_add_ps(acc[k], opaque(p));
    }
  }
  for (int k = 0; k < K; ++k) _mm512_storeu_ps(out + size_t(k) * out_stride, acc[k]);
}

using PanelFn = void (*)(const uint8_t*, const PanelActivations&, int, float*, size_t);
constexpr PanelFn kPanelQ8_0[kPanelTokensMax] = {PanelDotQ8_0<1>, PanelDotQ8_0<2>, PanelDotQ8_0<3>, PanelDotQ8_0<4>,
                                                 PanelDotQ8_0<5>, PanelDotQ8_0<6>, PanelDotQ8_0<7>, PanelDotQ8_0<8>};
#endif

}  // namespace

bool prefers_panels(TensorType t) { return PAGODA_PANELS_AVX512 && has_panels(t) && cpu_runs_panels(); }

void panel_dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
               size_t out_stride) {
  if (n_tokens < 1 || n_tokens > kPanelTokensMax || first < 0 || first + n_tokens > a.n_tokens)
    fail<InvalidArgument>("panel_dot: tokens {}..{} of {} (at most {} at a time)", first, first + n_tokens, a.n_tokens,
                          kPanelTokensMax);
#if PAGODA_PANELS_AVX512
  if (t == TensorType::Q8_0 && cpu_runs_panels())
    return kPanelQ8_0[n_tokens - 1](panel, a, first, out, out_stride);
#endif
  panel_dot_reference(t, panel, a, first, n_tokens, out, out_stride);
}

}  // namespace pagoda
