// AVX2 row-panel kernels for Q8_0, Q4_0 and Q5_0 (quant/panel_dot_avx2.h).
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

// Block b of a panel (rows 8 half .. 8 half + 7) against K tokens, added to
// acc[k]. Q8_0's codes are stored + 128 for vpdpbusd: back to signed, the
// products go as |w| times x carrying w's sign (|w| <= 128, so a pair of
// products stays within int16). The 4-bit and 5-bit codes are small enough
// to multiply as they are, less the activations' term (the code offset).
template <TensorType kType, int K>
PAGODA_AVX2_INLINE void block_half(const uint8_t* block, int half, const PanelActivations& a, int first, size_t b,
                                   __m256* acc) {
  constexpr bool kQ8 = kType == TensorType::Q8_0, kQ5 = kType == TensorType::Q5_0;
  constexpr size_t kCodes = kQ5 ? 96 : 32;
  const __m256i ones = _mm256_set1_epi16(1);
  const BlockQ8_0* x[K];
  for (int k = 0; k < K; ++k) x[k] = reinterpret_cast<const BlockQ8_0*>(a.rows + size_t(first + k) * a.row_stride) + b;
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
    for (int q = 0; q < 8; ++q)
      multiply(q, _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + kCodes + 64 * q)), flip));
  } else {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i h = _mm256_setzero_si256();
    if constexpr (kQ5) h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + 32));
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + kCodes + 64 * q));
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
  const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * half)));
  for (int k = 0; k < K; ++k) {
    const size_t i = size_t(first + k) * a.nb + b;
    __m256i sum = s[k];
    if constexpr (!kQ8) sum = _mm256_sub_epi32(sum, _mm256_set1_epi32(a.terms[i]));
    const __m256 p = _mm256_mul_ps(_mm256_mul_ps(wd, _mm256_set1_ps(a.scales[i])), _mm256_cvtepi32_ps(sum));
    acc[k] = _mm256_add_ps(acc[k], opaque(p));
  }
}

template <TensorType kType>
constexpr size_t kBlockBytes = kPanelRows * (kType == TensorType::Q8_0   ? sizeof(BlockQ8_0)
                                             : kType == TensorType::Q5_0 ? sizeof(BlockQ5_0)
                                                                         : sizeof(BlockQ4_0));
constexpr int kMaxTokens = 4;  // 16 ymm registers: 2 x 4 accumulators, 4 sums, the operands

// K tokens against one panel, the two halves of each block in turn.
template <TensorType kType, int K>
PAGODA_AVX2 void PanelDot(const uint8_t* panel, const PanelActivations& a, int first, float* out, size_t out_stride) {
  __m256 acc[2][K];
  for (auto& h : acc)
    for (auto& v : h) v = _mm256_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b)
    for (int half = 0; half < 2; ++half) block_half<kType, K>(panel + b * kBlockBytes<kType>, half, a, first, b, acc[half]);
  for (int k = 0; k < K; ++k)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(out + size_t(k) * out_stride + 8 * half, acc[half][k]);
}

// One token against N panels, a block of each in turn: N read streams.
template <TensorType kType, int N>
PAGODA_AVX2 void PanelDotStreams(const uint8_t* const* panels, const PanelActivations& a, int token,
                                 float* const* outs) {
  __m256 acc[N][2];
  for (auto& p : acc)
    for (auto& v : p) v = _mm256_setzero_ps();
  for (size_t b = 0; b < a.nb; ++b)
    for (int p = 0; p < N; ++p)
      for (int half = 0; half < 2; ++half)
        block_half<kType, 1>(panels[p] + b * kBlockBytes<kType>, half, a, token, b, &acc[p][half]);
  for (int p = 0; p < N; ++p)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(outs[p] + 8 * half, acc[p][half]);
}

using DotFn = void (*)(const uint8_t*, const PanelActivations&, int, float*, size_t);
using StreamsFn = void (*)(const uint8_t* const*, const PanelActivations&, int, float* const*);
struct Kernels {
  DotFn by_tokens[kMaxTokens];
  StreamsFn by_streams[kPanelStreamsMax];
};
template <TensorType kType, size_t... T, size_t... S>
constexpr Kernels kernels_of(std::index_sequence<T...>, std::index_sequence<S...>) {
  return Kernels{{PanelDot<kType, int(T) + 1>...}, {PanelDotStreams<kType, int(S) + 1>...}};
}
template <TensorType kType>
constexpr Kernels kKernels =
    kernels_of<kType>(std::make_index_sequence<kMaxTokens>(), std::make_index_sequence<kPanelStreamsMax>());

const Kernels* kernels(TensorType t) {
  switch (t) {
    case TensorType::Q8_0: return &kKernels<TensorType::Q8_0>;
    case TensorType::Q4_0: return &kKernels<TensorType::Q4_0>;
    case TensorType::Q5_0: return &kKernels<TensorType::Q5_0>;
    default: return nullptr;
  }
}
#else
constexpr int kMaxTokens = 1;
struct Kernels {};
const Kernels* kernels(TensorType) { return nullptr; }
#endif

}  // namespace

bool has_kernels(TensorType t) { return kernels(t) != nullptr; }

void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
         size_t out_stride) {
#if PAGODA_PANELS_AVX2
  const Kernels* ks = kernels(t);
  for (int k = 0; k < n_tokens; k += kMaxTokens) {
    const int n = std::min(kMaxTokens, n_tokens - k);
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
