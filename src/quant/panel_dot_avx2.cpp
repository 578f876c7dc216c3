// AVX2 row-panel kernels for every panel format (quant/panel_dot_avx2.h).
// Compiled with a target attribute, like the AVX-512 ones; run only where
// Highway's dispatch chose AVX2 or better. The same integer block sums and
// float expression as the scalar kernel, so the same bits.
#include "quant/panel_dot_avx2.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "quant/blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAGODA_PANELS_AVX2 1
#else
#define PAGODA_PANELS_AVX2 0
#endif

namespace pagoda::panels_avx2 {
namespace {

#if PAGODA_PANELS_AVX2
#define PAGODA_AVX2 __attribute__((target("avx2,fma,f16c")))
#define PAGODA_AVX2_INLINE PAGODA_AVX2 __attribute__((always_inline)) inline

// p, hidden from the optimizer: a product and the sum it joins stay two roundings.
PAGODA_AVX2 inline __m256 opaque(__m256 p) {
  asm("" : "+x"(p));
  return p;
}

PAGODA_AVX2 inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 8 F16 scales (8 rows) as floats.
PAGODA_AVX2 inline __m256 load_scales(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Token k's activation row, as blocks of type XBlock.
template <class XBlock>
const XBlock* token_row(const PanelActivations& a, int k) {
  return reinterpret_cast<const XBlock*>(a.rows + size_t(k) * a.row_stride);
}

PAGODA_AVX2 inline __m256i bcast_quad(const int8_t* p) {
  int32_t q;
  std::memcpy(&q, p, 4);
  return _mm256_set1_epi32(q);
}

// Bits e0 .. e0 + 3 of every 32-bit lane of h, as bit 4 of its 4 bytes (Q5_0's fifth bits).
PAGODA_AVX2 inline __m256i fifth_bits(__m256i h, int e0) {
  const __m256i four = _mm256_and_si256(_mm256_srli_epi32(h, e0), _mm256_set1_epi32(0xF));
  return _mm256_and_si256(_mm256_mullo_epi32(four, _mm256_set1_epi32(0x02040810)), _mm256_set1_epi32(0x10101010));
}

// Q8_0, Q4_0 and Q5_0: block b of a panel (rows 8 half .. 8 half + 7)
// against K tokens, added to acc[k]. Q8_0's codes are stored + 128 for
// vpdpbusd: back to signed, the products go as |w| times x carrying w's sign
// (|w| <= 128, so a pair of products stays within int16). The 4-bit and
// 5-bit codes are small enough to multiply as they are, less the
// activations' term (the code offset).
template <TensorType kType>
struct Legacy {
  static constexpr size_t kBlockBytes = kPanelRows * (kType == TensorType::Q8_0   ? sizeof(BlockQ8_0)
                                                      : kType == TensorType::Q5_0 ? sizeof(BlockQ5_0)
                                                                                  : sizeof(BlockQ4_0));
  static constexpr int kMaxTokens = 4;  // 16 registers: 2 x 4 accumulators, 4 sums, the operands
  static constexpr bool kPrefetch = false;

  template <int K>
  PAGODA_AVX2_INLINE static void block_half(const uint8_t* block, int half, const PanelActivations& a, int first,
                                            size_t b, __m256* acc) {
    constexpr bool kQ8 = kType == TensorType::Q8_0, kQ5 = kType == TensorType::Q5_0;
    constexpr size_t kCodes = kQ5 ? 96 : 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const BlockQ8_0* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_0>(a, first + k) + b;
    __m256i s[K];
    for (int k = 0; k < K; ++k) s[k] = _mm256_setzero_si256();
    auto multiply = [&](int q, __m256i codes) PAGODA_AVX2 {
      for (int k = 0; k < K; ++k) {
        const __m256i xv = bcast_quad(x[k]->qs + 4 * q);
        const __m256i p = kQ8 ? _mm256_maddubs_epi16(_mm256_sign_epi8(codes, codes), _mm256_sign_epi8(xv, codes))
                              : _mm256_maddubs_epi16(codes, xv);
        s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(p, ones));
      }
    };
    const uint8_t* lanes = block + 32 * half;  // this half's 32 bytes of each 64-byte group
    if constexpr (kQ8) {
      const __m256i flip = _mm256_set1_epi8(char(0x80));
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) multiply(q, _mm256_xor_si256(load(lanes + kCodes + 64 * q), flip));
    } else {
      const __m256i low4 = _mm256_set1_epi8(0x0F);
      __m256i h = _mm256_setzero_si256();
      if constexpr (kQ5) h = load(lanes + 32);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m256i v = load(lanes + kCodes + 64 * q);
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kQ5) {
          lo = _mm256_or_si256(lo, fifth_bits(h, 4 * q));
          hi = _mm256_or_si256(hi, fifth_bits(h, 16 + 4 * q));
        }
        multiply(q, lo);
        multiply(q + 4, hi);
      }
    }
    // d_w * d_x * (sum - term), as vec_dot_q8_0_q8_0 and its kin.
    const __m256 wd = load_scales(block + 16 * half);
    for (int k = 0; k < K; ++k) {
      const size_t i = size_t(first + k) * a.nb + b;
      __m256i sum = s[k];
      if constexpr (!kQ8) sum = _mm256_sub_epi32(sum, _mm256_set1_epi32(a.terms[i]));
      const __m256 p = _mm256_mul_ps(_mm256_mul_ps(wd, _mm256_set1_ps(a.scales[i])), _mm256_cvtepi32_ps(sum));
      acc[k] = _mm256_add_ps(acc[k], opaque(p));
    }
  }
};

// Byte j (0..3) of every 32-bit lane, zero-extended.
PAGODA_AVX2 inline __m256i byte_u32(__m256i v, int j) {
  return _mm256_and_si256(_mm256_srli_epi32(v, 8 * j), _mm256_set1_epi32(0xFF));
}

// Q4_K, as the AVX-512 kernel (panel_dot_avx512.cpp) on half the rows: the
// scales and mins unpacked in their lanes, the mins against the activations'
// sub-block sums by vpmaddwd, per 64-element chunk 8 loads of 8 rows x 8
// nibbles, each nibble half times the tokens' quads (the high nibbles shifted
// down: 16 x a code times an activation could overflow vpmaddubsw's pairs),
// each sub-block's sum times its scale.
struct Q4K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ4_K);
  static constexpr int kMaxTokens = 2;
  static constexpr bool kPrefetch = true;

  template <int K>
  PAGODA_AVX2_INLINE static void block_half(const uint8_t* block, int half, const PanelActivations& a, int first,
                                            size_t b, __m256* acc) {
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const __m256i low4 = _mm256_set1_epi8(0x0F), low6 = _mm256_set1_epi8(63), bits45 = _mm256_set1_epi8(0x30);
    const __m256i low16 = _mm256_set1_epi32(0x00FF00FF), ones = _mm256_set1_epi16(1);
    const uint8_t* lanes = block + 32 * half;
    const __m256i s0 = load(lanes + 64), s1 = load(lanes + 128), s2 = load(lanes + 192);
    // unpack_q4_k_scale, 8 rows at once: scales and mins of sub-blocks 0-3, then 4-7.
    const __m256i sc_lo = _mm256_and_si256(s0, low6), m_lo = _mm256_and_si256(s1, low6);
    const __m256i sc_hi =
        _mm256_or_si256(_mm256_and_si256(s2, low4), _mm256_and_si256(_mm256_srli_epi16(s0, 2), bits45));
    const __m256i m_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(s2, 4), low4),
                                         _mm256_and_si256(_mm256_srli_epi16(s1, 2), bits45));
    // Mins as 16-bit pairs (0, 2), (1, 3), (4, 6), (5, 7), as the terms' pairs.
    const __m256i m_pairs[4] = {_mm256_and_si256(m_lo, low16), _mm256_srli_epi16(m_lo, 8),
                                _mm256_and_si256(m_hi, low16), _mm256_srli_epi16(m_hi, 8)};
    const __m256 wd = load_scales(block + 16 * half), wmin = load_scales(block + 32 + 16 * half);
    __m256 mins[K];
    __m256i scaled[K];
    for (int k = 0; k < K; ++k) {
      const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 4;
      __m256i m = _mm256_setzero_si256();
      for (int p = 0; p < 4; ++p) m = _mm256_add_epi32(m, _mm256_madd_epi16(m_pairs[p], _mm256_set1_epi32(terms[p])));
      mins[k] = opaque(_mm256_mul_ps(wmin, _mm256_cvtepi32_ps(m)));
      scaled[k] = _mm256_setzero_si256();
    }
    const uint8_t* codes = lanes + 256;
    for (int c = 0; c < 4; ++c) {
      __m256i lo[K], hi[K];
      for (int k = 0; k < K; ++k) lo[k] = hi[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const __m256i v = load(codes + 64 * (8 * c + q));
        const __m256i v_lo = _mm256_and_si256(v, low4), v_hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        for (int k = 0; k < K; ++k) {
          const __m256i p_lo = _mm256_maddubs_epi16(v_lo, bcast_quad(x[k]->qs + 64 * c + 4 * q));
          const __m256i p_hi = _mm256_maddubs_epi16(v_hi, bcast_quad(x[k]->qs + 64 * c + 32 + 4 * q));
          lo[k] = _mm256_add_epi32(lo[k], _mm256_madd_epi16(p_lo, ones));
          hi[k] = _mm256_add_epi32(hi[k], _mm256_madd_epi16(p_hi, ones));
        }
      }
      const __m256i sc_a = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2));
      const __m256i sc_b = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2) + 1);
      for (int k = 0; k < K; ++k) {
        scaled[k] = _mm256_add_epi32(scaled[k], _mm256_mullo_epi32(lo[k], sc_a));
        scaled[k] = _mm256_add_epi32(scaled[k], _mm256_mullo_epi32(hi[k], sc_b));
      }
    }
    for (int k = 0; k < K; ++k) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q4_k_q8_k
      const __m256 s = opaque(_mm256_mul_ps(wd, _mm256_cvtepi32_ps(scaled[k])));
      const __m256 xd = _mm256_set1_ps(a.scales[size_t(first + k) * a.nb + b]);
      acc[k] = _mm256_add_ps(acc[k], opaque(_mm256_mul_ps(xd, opaque(_mm256_sub_ps(s, mins[k])))));
    }
  }
};

// Byte j (0..3) of every 32-bit lane, sign-extended.
PAGODA_AVX2 inline __m256i byte_i32(__m256i v, int j) {
  return _mm256_srai_epi32(_mm256_slli_epi32(v, 24 - 8 * j), 24);
}

// Q6_K, as the AVX-512 kernel on half the rows: per 128 elements (half h)
// and kk = 0, 1, 8 loads of low nibbles and their top bits give 8 rows x 4
// six-bit codes for two 32-element groups (codes up to 63: vpmaddubsw's
// pairs stay within int16); sub-block sums less 32 x the activations' sum,
// times the signed sub-block scale.
struct Q6K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ6_K);
  static constexpr int kMaxTokens = 2;
  static constexpr bool kPrefetch = true;

  template <int K>
  PAGODA_AVX2_INLINE static void block_half(const uint8_t* block, int half, const PanelActivations& a, int first,
                                            size_t b, __m256* acc) {
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30), ones = _mm256_set1_epi16(1);
    const uint8_t* lanes = block + 32 * half;
    __m256i sc_words[4];
    for (int i = 0; i < 4; ++i) sc_words[i] = load(lanes + 3072 + 64 * i);
    __m256i scaled[K];
    for (int k = 0; k < K; ++k) scaled[k] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h)
      for (int kk = 0; kk < 2; ++kk)
        for (int part = 0; part < 2; ++part) {  // quads 4 part .. 4 part + 3: sub-blocks 8h + 2k + part
          __m256i sa[K], sb[K];  // groups k = kk and kk + 2
          for (int k = 0; k < K; ++k) sa[k] = sb[k] = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int q = 4 * part; q < 4 * part + 4; ++q) {
            const __m256i v = load(lanes + 64 * ((2 * h + kk) * 8 + q));
            const __m256i u = load(lanes + 2048 + 64 * (8 * h + q));
            // Top bits of group g (0..3) sit at bits 2g, 2g + 1 of u: moved to bits 4, 5.
            const __m256i top_a = _mm256_and_si256(_mm256_slli_epi16(u, 4 - 2 * kk), bits45);
            const __m256i top_b = _mm256_and_si256(kk == 0 ? u : _mm256_srli_epi16(u, 2), bits45);
            const __m256i ca = _mm256_or_si256(_mm256_and_si256(v, low4), top_a);
            const __m256i cb = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), top_b);
            for (int k = 0; k < K; ++k) {
              const __m256i pa = _mm256_maddubs_epi16(ca, bcast_quad(x[k]->qs + 128 * h + 32 * kk + 4 * q));
              const __m256i pb = _mm256_maddubs_epi16(cb, bcast_quad(x[k]->qs + 128 * h + 32 * (kk + 2) + 4 * q));
              sa[k] = _mm256_add_epi32(sa[k], _mm256_madd_epi16(pa, ones));
              sb[k] = _mm256_add_epi32(sb[k], _mm256_madd_epi16(pb, ones));
            }
          }
          const int ja = 8 * h + 2 * kk + part, jb = ja + 4;
          const __m256i sc_a = byte_i32(sc_words[ja / 4], ja % 4), sc_b = byte_i32(sc_words[jb / 4], jb % 4);
          for (int k = 0; k < K; ++k) {
            const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 16;
            const __m256i da = _mm256_sub_epi32(sa[k], _mm256_set1_epi32(terms[ja]));
            const __m256i db = _mm256_sub_epi32(sb[k], _mm256_set1_epi32(terms[jb]));
            scaled[k] = _mm256_add_epi32(scaled[k], _mm256_mullo_epi32(da, sc_a));
            scaled[k] = _mm256_add_epi32(scaled[k], _mm256_mullo_epi32(db, sc_b));
          }
        }
    const __m256 wd = load_scales(block + 3328 + 16 * half);
    for (int k = 0; k < K; ++k) {  // x.d * d * scaled, as vec_dot_q6_k_q8_k
      const __m256 xd = _mm256_set1_ps(a.scales[size_t(first + k) * a.nb + b]);
      const __m256 p = _mm256_mul_ps(_mm256_mul_ps(xd, wd), _mm256_cvtepi32_ps(scaled[k]));
      acc[k] = _mm256_add_ps(acc[k], opaque(p));
    }
  }
};

// The super-block two on, as the AVX-512 K-quant kernels ask.
PAGODA_AVX2 inline void prefetch_ahead(const uint8_t* block, size_t block_bytes) {
  const uint8_t* ahead = block + 2 * block_bytes;
  for (size_t line = 0; line < block_bytes; line += 64) __builtin_prefetch(ahead + line, 0, 3);
}

// K tokens against one panel, the two halves of each block in turn.
template <class Format, int K>
PAGODA_AVX2 void PanelDot(const uint8_t* panel, const PanelActivations& a, int first, float* out, size_t out_stride) {
  __m256 acc[2][K];
  for (auto& h : acc)
    for (auto& v : h) v = _mm256_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b) {
    const uint8_t* block = panel + b * Format::kBlockBytes;
    if constexpr (Format::kPrefetch) prefetch_ahead(block, Format::kBlockBytes);
    for (int half = 0; half < 2; ++half) Format::template block_half<K>(block, half, a, first, b, acc[half]);
  }
  for (int k = 0; k < K; ++k)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(out + size_t(k) * out_stride + 8 * half, acc[half][k]);
}

// One token against N panels, a block of each in turn: N read streams.
template <class Format, int N>
PAGODA_AVX2 void PanelDotStreams(const uint8_t* const* panels, const PanelActivations& a, int token,
                                 float* const* outs) {
  __m256 acc[N][2];
  for (auto& p : acc)
    for (auto& v : p) v = _mm256_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b)
    for (int p = 0; p < N; ++p) {
      const uint8_t* block = panels[p] + b * Format::kBlockBytes;
      if constexpr (Format::kPrefetch) prefetch_ahead(block, Format::kBlockBytes);
      for (int half = 0; half < 2; ++half) Format::template block_half<1>(block, half, a, token, b, &acc[p][half]);
    }
  for (int p = 0; p < N; ++p)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(outs[p] + 8 * half, acc[p][half]);
}

using DotFn = void (*)(const uint8_t*, const PanelActivations&, int, float*, size_t);
using StreamsFn = void (*)(const uint8_t* const*, const PanelActivations&, int, float* const*);
struct Kernels {
  DotFn by_tokens[4];
  int max_tokens;
  StreamsFn by_streams[kPanelStreamsMax];
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
#else
struct Kernels {};
const Kernels* kernels(TensorType) { return nullptr; }
#endif

}  // namespace

bool has_kernels(TensorType t) { return kernels(t) != nullptr; }

void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
         size_t out_stride) {
#if PAGODA_PANELS_AVX2
  const Kernels* ks = kernels(t);
  for (int k = 0; k < n_tokens; k += ks->max_tokens) {
    const int n = std::min(ks->max_tokens, n_tokens - k);
    ks->by_tokens[n - 1](panel, a, first + k, out + size_t(k) * out_stride, out_stride);
  }
#endif
}

void streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
             float* const* outs) {
#if PAGODA_PANELS_AVX2
  kernels(t)->by_streams[n - 1](panels, a, token, outs);
#endif
}

}  // namespace pagoda::panels_avx2
