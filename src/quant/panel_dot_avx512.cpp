// The row-panel kernels for AVX-512 VNNI (quant/panels.h), and the run-time
// choice between them and the scalar reference. Each format is a struct
// whose block<K>() handles one (super-)block of a panel for K tokens;
// PanelDot walks a panel with it, PanelDotStreams several side by side. One
// target only, so they are compiled with a target attribute rather than
// through Highway's per-target machinery; they run where Highway's dispatch
// chose AVX3_DL or better.
#include <algorithm>
#include <cstring>
#include <utility>

#include "quant/blocks.h"
#include "quant/dot_simd.h"
#include "quant/panel_dot_avx2.h"
#include "quant/panels.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAGODA_PANELS_AVX512 1
#else
#define PAGODA_PANELS_AVX512 0
#endif

namespace pagoda {
namespace {

bool cpu_runs_panels() { return simd_target_is_avx512_vnni(); }
// Elsewhere on x86, the AVX2 kernels of the formats that have them.
bool cpu_runs_avx2_panels(TensorType t) { return simd_target_is_x86_avx2() && panels_avx2::has_kernels(t); }

#if PAGODA_PANELS_AVX512
// GCC 12 warns inside its own headers: the conversions pass _mm512_undefined_ps()
// as the (unused) merge source.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define PAGODA_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define PAGODA_VNNI_INLINE PAGODA_VNNI __attribute__((always_inline)) inline

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

// The K-quant kernels ask for the super-block two on (4.5-6.5 KB ahead)
// while working on one: 5632 x 2048 from DRAM, one token, 2 threads (Zen 5
// VM), Q4_K 48-55 GB/s against 31-44 without, Q6_K 47-60 against 21-40 (its
// codes are read out of address order); one or three ahead did worse. The
// lighter legacy kernels do better with the hardware prefetchers alone
// (1B Q8_0 decode with prefetches 1-16 KB ahead, into L1 or L2: 3-10% slower).
PAGODA_VNNI inline void prefetch_ahead(const uint8_t* block, size_t block_bytes) {
  const uint8_t* ahead = block + 2 * block_bytes;
  for (size_t line = 0; line < block_bytes; line += 64) __builtin_prefetch(ahead + line, 0, 3);
}

PAGODA_VNNI inline __m512i bcast_quad(const int8_t* p) { return _mm512_set1_epi32(load_quad(p)); }

// The panel's F16 scales of one block as floats (16 rows).
PAGODA_VNNI inline __m512 load_scales(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Token k's activation row, as blocks of type XBlock.
template <class XBlock>
const XBlock* token_row(const PanelActivations& a, int k) {
  return reinterpret_cast<const XBlock*>(a.rows + size_t(k) * a.row_stride);
}

// Bits e0 .. e0 + 3 of every 32-bit lane of h, as bit 4 of its 4 bytes (the
// fifth bits of Q5_0 elements e0 ..): a multiply spreads 4 bits 7 apart.
PAGODA_VNNI inline __m512i fifth_bits(__m512i h, int e0) {
  const __m512i four = _mm512_and_si512(_mm512_srli_epi32(h, e0), _mm512_set1_epi32(0xF));
  return _mm512_and_si512(_mm512_mullo_epi32(four, _mm512_set1_epi32(0x02040810)), _mm512_set1_epi32(0x10101010));
}

// The multiply-adds of one block of a 32-element format, 16 rows x K tokens:
// Q8_0 (8 loads of 16 rows x 4 codes), Q4_0 and Q5_0 (4 loads of 16 rows x 8
// nibbles, low and high giving quads q and q + 4; Q5_0 ors in the fifth
// bits). Each quad of codes times every token's matching 4 activation codes
// (a broadcast) by vpdpbusd, into s[quad % kChains][token].
template <TensorType kType, int K, int kChains>
PAGODA_VNNI inline void legacy_block_sums(const uint8_t* block, const BlockQ8_0* const* xb, __m512i (&s)[kChains][K]) {
  constexpr bool kQ8 = kType == TensorType::Q8_0, kQ5 = kType == TensorType::Q5_0;
  constexpr size_t kCodes = kQ5 ? 96 : 32;  // after the scales (and Q5_0's fifth bits)
  for (int c = 0; c < kChains; ++c)
    for (int k = 0; k < K; ++k) s[c][k] = _mm512_setzero_si512();
  auto multiply = [&](int q, __m512i codes) PAGODA_VNNI {
    for (int k = 0; k < K; ++k)
      s[q % kChains][k] = _mm512_dpbusd_epi32(s[q % kChains][k], codes, bcast_quad(xb[k]->qs + 4 * q));
  };
  if constexpr (kQ8) {
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) multiply(q, _mm512_loadu_si512(block + kCodes + 64 * q));
  } else {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i h = _mm512_setzero_si512();
    if constexpr (kQ5) h = _mm512_loadu_si512(block + 32);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512i v = _mm512_loadu_si512(block + kCodes + 64 * q);
      __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      if constexpr (kQ5) {
        lo = _mm512_or_si512(lo, fifth_bits(h, 4 * q));
        hi = _mm512_or_si512(hi, fifth_bits(h, 16 + 4 * q));
      }
      multiply(q, lo);
      multiply(q + 4, hi);
    }
  }
}

// d_w * d_x * (sum - the activations' term), as vec_dot_q8_0_q8_0 and its
// kin (the codes are unsigned, so the offset's share of the block sum goes).
PAGODA_VNNI inline __m512 legacy_block_result(const uint8_t* block, __m512i sum, int32_t term, float x_scale) {
  sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(term));
  return opaque(_mm512_mul_ps(_mm512_mul_ps(load_scales(block), _mm512_set1_ps(x_scale)), _mm512_cvtepi32_ps(sum)));
}

// Q8_0, Q4_0 and Q5_0: block b of a panel against K (1..8) tokens. With one
// or two tokens a block's multiply-adds run as two chains.
template <TensorType kType>
struct Legacy {
  static constexpr size_t kBlockBytes =
      kPanelRows * (kType == TensorType::Q8_0   ? sizeof(BlockQ8_0)
                    : kType == TensorType::Q5_0 ? sizeof(BlockQ5_0)
                                                : sizeof(BlockQ4_0));
  static constexpr int kMaxTokens = 8;
  static constexpr bool kPrefetch = false;  // the hardware prefetchers keep up

  template <int K>
  PAGODA_VNNI_INLINE static void block(const uint8_t* block, const PanelActivations& a, int first, size_t b,
                                       __m512* acc) {
    constexpr int kChains = K <= 2 ? 2 : 1;
    const BlockQ8_0* xb[K];
    for (int k = 0; k < K; ++k) xb[k] = token_row<BlockQ8_0>(a, first + k) + b;
    __m512i s[kChains][K];
    legacy_block_sums<kType, K, kChains>(block, xb, s);
    for (int k = 0; k < K; ++k) {
      __m512i sum = s[0][k];
      if constexpr (kChains == 2) sum = _mm512_add_epi32(sum, s[1][k]);
      const size_t i = size_t(first + k) * a.nb + b;
      acc[k] = _mm512_add_ps(acc[k], legacy_block_result(block, sum, a.terms[i], a.scales[i]));
    }
  }
};

// Byte j (0..3) of every 32-bit lane, zero- or sign-extended.
PAGODA_VNNI inline __m512i byte_u32(__m512i v, int j) {
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * j), _mm512_set1_epi32(0xFF));
}
PAGODA_VNNI inline __m512i byte_i32(__m512i v, int j) {
  return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * j), 24);
}

// Q4_K: super-block b of a panel against K (1..4) tokens: the 16 rows'
// 6-bit scales and mins unpacked in their lanes (bytes: sub-block j's in
// byte j % 4 of a lane), the mins against the activations' sub-block sums by
// 4 vpdpwssd, then per 64-element chunk 8 loads of 16 rows x 8 nibbles: the
// low nibbles (sub-block 2c) and the high ones kept in place (16 x the code,
// sub-block 2c + 1; the sum is divided by 16 after, exactly) each times the
// tokens' quads by vpdpbusd, and each sub-block's sum times its scale.
struct Q4K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ4_K);
  static constexpr int kMaxTokens = 4;  // the accumulators fill the 32 registers
  static constexpr bool kPrefetch = true;

  template <int K>
  PAGODA_VNNI_INLINE static void block(const uint8_t* block, const PanelActivations& a, int first, size_t b,
                                       __m512* acc) {
    constexpr int kChains = K == 1 ? 2 : 1;
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const __m512i low4 = _mm512_set1_epi8(0x0F), high4 = _mm512_set1_epi8(char(0xF0));
    const __m512i low6 = _mm512_set1_epi8(63), bits45 = _mm512_set1_epi8(0x30);
    const __m512i low16 = _mm512_set1_epi32(0x00FF00FF);
    const __m512i s0 = _mm512_loadu_si512(block + 64), s1 = _mm512_loadu_si512(block + 128);
    const __m512i s2 = _mm512_loadu_si512(block + 192);
    // unpack_q4_k_scale, 16 rows at once: scales and mins of sub-blocks 0-3, then 4-7.
    const __m512i sc_lo = _mm512_and_si512(s0, low6), m_lo = _mm512_and_si512(s1, low6);
    const __m512i sc_hi = _mm512_or_si512(_mm512_and_si512(s2, low4), _mm512_and_si512(_mm512_srli_epi16(s0, 2), bits45));
    const __m512i m_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(s2, 4), low4),
                                         _mm512_and_si512(_mm512_srli_epi16(s1, 2), bits45));
    // Mins as 16-bit pairs (0, 2), (1, 3), (4, 6), (5, 7), as the terms' pairs.
    const __m512i m_pairs[4] = {_mm512_and_si512(m_lo, low16), _mm512_srli_epi16(m_lo, 8),
                                _mm512_and_si512(m_hi, low16), _mm512_srli_epi16(m_hi, 8)};
    const __m512 wd = load_scales(block), wmin = load_scales(block + 32);
    __m512 mins[K];
    __m512i scaled[K];
    for (int k = 0; k < K; ++k) {
      const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 4;
      __m512i m = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) m = _mm512_dpwssd_epi32(m, m_pairs[p], _mm512_set1_epi32(terms[p]));
      mins[k] = opaque(_mm512_mul_ps(wmin, _mm512_cvtepi32_ps(m)));
      scaled[k] = _mm512_setzero_si512();
    }
    const uint8_t* codes = block + 256;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i lo[kChains][K], hi[kChains][K];
      for (int h = 0; h < kChains; ++h)
        for (int k = 0; k < K; ++k) lo[h][k] = hi[h][k] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const __m512i v = _mm512_loadu_si512(codes + 64 * (8 * c + q));
        const __m512i v_lo = _mm512_and_si512(v, low4), v_hi = _mm512_and_si512(v, high4);
        for (int k = 0; k < K; ++k) {
          lo[q % kChains][k] = _mm512_dpbusd_epi32(lo[q % kChains][k], v_lo, bcast_quad(x[k]->qs + 64 * c + 4 * q));
          hi[q % kChains][k] = _mm512_dpbusd_epi32(hi[q % kChains][k], v_hi, bcast_quad(x[k]->qs + 64 * c + 32 + 4 * q));
        }
      }
      const __m512i sc_a = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2));
      const __m512i sc_b = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2) + 1);
      for (int k = 0; k < K; ++k) {
        __m512i l = lo[0][k], h16 = hi[0][k];
        if constexpr (kChains == 2) {
          l = _mm512_add_epi32(l, lo[1][k]);
          h16 = _mm512_add_epi32(h16, hi[1][k]);
        }
        scaled[k] = _mm512_add_epi32(scaled[k], _mm512_mullo_epi32(l, sc_a));
        scaled[k] = _mm512_add_epi32(scaled[k], _mm512_mullo_epi32(_mm512_srai_epi32(h16, 4), sc_b));
      }
    }
    for (int k = 0; k < K; ++k) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q4_k_q8_k
      const __m512 s = opaque(_mm512_mul_ps(wd, _mm512_cvtepi32_ps(scaled[k])));
      const __m512 xd = _mm512_set1_ps(a.scales[size_t(first + k) * a.nb + b]);
      const __m512 t = _mm512_mul_ps(xd, opaque(_mm512_sub_ps(s, mins[k])));
      acc[k] = _mm512_add_ps(acc[k], opaque(t));
    }
  }
};

// Q6_K: super-block b of a panel against K (1..4) tokens. Per 128 elements
// (half h) and kk = 0, 1: 8 loads of low nibbles (elements 32kk + 4q.. in the low ones,
// 32 (kk + 2) + 4q.. in the high) and their top bits, giving 16 rows x 4
// six-bit codes for two 32-element groups; sub-block sums (16 elements, 4
// quads) less 32 x the activations' sum, times the signed sub-block scale.
struct Q6K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ6_K);
  static constexpr int kMaxTokens = 4;
  static constexpr bool kPrefetch = true;

  template <int K>
  PAGODA_VNNI_INLINE static void block(const uint8_t* block, const PanelActivations& a, int first, size_t b,
                                       __m512* acc) {
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    __m512i sc_words[4];
    for (int i = 0; i < 4; ++i) sc_words[i] = _mm512_loadu_si512(block + 3072 + 64 * i);
    __m512i scaled[K];
    for (int k = 0; k < K; ++k) scaled[k] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
      for (int kk = 0; kk < 2; ++kk)
        for (int part = 0; part < 2; ++part) {  // quads 4 part .. 4 part + 3: sub-blocks 8h + 2k + part
          __m512i sa[K], sb[K];  // groups k = kk and kk + 2
          for (int k = 0; k < K; ++k) sa[k] = sb[k] = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (int q = 4 * part; q < 4 * part + 4; ++q) {
            const __m512i v = _mm512_loadu_si512(block + 64 * ((2 * h + kk) * 8 + q));
            const __m512i u = _mm512_loadu_si512(block + 2048 + 64 * (8 * h + q));
            // Top bits of group g (0..3) sit at bits 2g, 2g + 1 of u: moved to bits 4, 5.
            const __m512i top_a = _mm512_and_si512(_mm512_slli_epi16(u, 4 - 2 * kk), bits45);
            const __m512i top_b = _mm512_and_si512(kk == 0 ? u : _mm512_srli_epi16(u, 2), bits45);
            const __m512i ca = _mm512_or_si512(_mm512_and_si512(v, low4), top_a);
            const __m512i cb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), top_b);
            for (int k = 0; k < K; ++k) {
              sa[k] = _mm512_dpbusd_epi32(sa[k], ca, bcast_quad(x[k]->qs + 128 * h + 32 * kk + 4 * q));
              sb[k] = _mm512_dpbusd_epi32(sb[k], cb, bcast_quad(x[k]->qs + 128 * h + 32 * (kk + 2) + 4 * q));
            }
          }
          const int ja = 8 * h + 2 * kk + part, jb = ja + 4;
          const __m512i sc_a = byte_i32(sc_words[ja / 4], ja % 4), sc_b = byte_i32(sc_words[jb / 4], jb % 4);
          for (int k = 0; k < K; ++k) {
            const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 16;
            const __m512i da = _mm512_sub_epi32(sa[k], _mm512_set1_epi32(terms[ja]));
            const __m512i db = _mm512_sub_epi32(sb[k], _mm512_set1_epi32(terms[jb]));
            scaled[k] = _mm512_add_epi32(scaled[k], _mm512_mullo_epi32(da, sc_a));
            scaled[k] = _mm512_add_epi32(scaled[k], _mm512_mullo_epi32(db, sc_b));
          }
        }
    const __m512 wd = load_scales(block + 3328);
    for (int k = 0; k < K; ++k) {  // x.d * d * scaled, as vec_dot_q6_k_q8_k
      const __m512 xd = _mm512_set1_ps(a.scales[size_t(first + k) * a.nb + b]);
      const __m512 p = _mm512_mul_ps(_mm512_mul_ps(xd, wd), _mm512_cvtepi32_ps(scaled[k]));
      acc[k] = _mm512_add_ps(acc[k], opaque(p));
    }
  }
};

// K tokens against one panel, block by block.
template <class Format, int K>
PAGODA_VNNI void PanelDot(const uint8_t* panel, const PanelActivations& a, int first, float* out, size_t out_stride) {
  __m512 acc[K];
  for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b) {
    const uint8_t* block = panel + b * Format::kBlockBytes;
    if constexpr (Format::kPrefetch) prefetch_ahead(block, Format::kBlockBytes);
    Format::template block<K>(block, a, first, b, acc);
  }
  for (int k = 0; k < K; ++k) _mm512_storeu_ps(out + size_t(k) * out_stride, acc[k]);
}

// One token against N panels, a block of each in turn: N read streams.
template <class Format, int N>
PAGODA_VNNI void PanelDotStreams(const uint8_t* const* panels, const PanelActivations& a, int token,
                                 float* const* outs) {
  __m512 acc[N];
  for (int p = 0; p < N; ++p) acc[p] = _mm512_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b)
    for (int p = 0; p < N; ++p) {
      const uint8_t* block = panels[p] + b * Format::kBlockBytes;
      if constexpr (Format::kPrefetch) prefetch_ahead(block, Format::kBlockBytes);
      Format::template block<1>(block, a, token, b, &acc[p]);
    }
  for (int p = 0; p < N; ++p) _mm512_storeu_ps(outs[p], acc[p]);
}

using PanelFn = void (*)(const uint8_t*, const PanelActivations&, int, float*, size_t);
using PanelStreamsFn = void (*)(const uint8_t* const*, const PanelActivations&, int, float* const*);

// A format's kernels: one per token count up to its widest, one per number
// of panels side by side.
struct Kernels {
  PanelFn by_tokens[kPanelTokensMax] = {};
  int max_tokens = 0;
  PanelStreamsFn by_streams[kPanelStreamsMax] = {};
};

template <class Format, size_t... T, size_t... S>
constexpr Kernels kernels_of(std::index_sequence<T...>, std::index_sequence<S...>) {
  return Kernels{{PanelDot<Format, int(T) + 1>...}, int(sizeof...(T)), {PanelDotStreams<Format, int(S) + 1>...}};
}
template <class Format>
constexpr Kernels kKernels = kernels_of<Format>(std::make_index_sequence<Format::kMaxTokens>(),
                                                std::make_index_sequence<kPanelStreamsMax>());

const Kernels* kernels(TensorType t) {
  switch (t) {
    case TensorType::Q8_0: return &kKernels<Legacy<TensorType::Q8_0>>;
    case TensorType::Q4_0: return &kKernels<Legacy<TensorType::Q4_0>>;
    case TensorType::Q5_0: return &kKernels<Legacy<TensorType::Q5_0>>;
    case TensorType::Q4_K: return &kKernels<Q4K>;
    case TensorType::Q6_K: return &kKernels<Q6K>;
    default: return nullptr;
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace

bool prefers_panels(TensorType t) {
  return has_panels(t) && ((PAGODA_PANELS_AVX512 && cpu_runs_panels()) || cpu_runs_avx2_panels(t));
}

void panel_dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
               size_t out_stride) {
  if (n_tokens < 1 || n_tokens > kPanelTokensMax || first < 0 || first + n_tokens > a.n_tokens)
    fail<InvalidArgument>("panel_dot: tokens {}..{} of {} (at most {} at a time)", first, first + n_tokens, a.n_tokens,
                          kPanelTokensMax);
  if (a.type != t) fail<InvalidArgument>("panel_dot: {} weights, activations prepared for {}", tensor_type_name(t),
                                         tensor_type_name(a.type));
#if PAGODA_PANELS_AVX512
  if (const Kernels* ks = cpu_runs_panels() ? kernels(t) : nullptr) {
    for (int k = 0; k < n_tokens; k += ks->max_tokens) {
      const int n = std::min(ks->max_tokens, n_tokens - k);
      ks->by_tokens[n - 1](panel, a, first + k, out + size_t(k) * out_stride, out_stride);
    }
    return;
  }
#endif
  if (cpu_runs_avx2_panels(t)) return panels_avx2::dot(t, panel, a, first, n_tokens, out, out_stride);
  panel_dot_reference(t, panel, a, first, n_tokens, out, out_stride);
}

void panel_dot_streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
                       float* const* outs) {
  if (n < 1 || n > kPanelStreamsMax) fail<InvalidArgument>("panel_dot_streams: {} panels (1..{})", n, kPanelStreamsMax);
#if PAGODA_PANELS_AVX512
  if (a.type == t && token >= 0 && token < a.n_tokens && cpu_runs_panels())
    if (const Kernels* ks = kernels(t)) return ks->by_streams[n - 1](panels, a, token, outs);
#endif
  if (a.type == t && token >= 0 && token < a.n_tokens && cpu_runs_avx2_panels(t))
    return panels_avx2::streams(t, panels, n, a, token, outs);
  for (int i = 0; i < n; ++i) panel_dot(t, panels[i], a, token, 1, outs[i], kPanelRows);
}

int panel_decode_streams(TensorType t) {
  if (cpu_runs_panels()) return t == TensorType::Q8_0 ? 4 : 2;
  // The AVX2 kernels have 16 registers: 1B decode on AVX2, Q8_0 at 0.33 of
  // the read speed with 4 streams, 0.56-0.73 with 2; Q4_K_M 0.51 with 2,
  // 0.58-0.64 with one.
  return t == TensorType::Q4_K || t == TensorType::Q6_K ? 1 : 2;
}

}  // namespace pagoda
