// The quantized dot kernels of Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q5_K and
// IQ4_XS (kernels/quant_dot_decoded.h; the interface is kernels/quant_dot.h). Each
// block is decoded once into bytes (codes) and small integers (sub-block
// scales, mins) by its format (quant_dot_q5k-inl.h, quant_dot_q3k-inl.h,
// quant_dot_iq4-inl.h); generic Highway kernels multiply those with the
// activations (quant_dot_decoded-inl.h), and the float half of
// quant_dot_float-inl.h applies the scales in the scalar kernels' order: the
// same bits as quant/dot.h on every target. Highway compiles the part between
// HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE once per target.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/quant_dot.h"
#include "kernels/quant_dot_decoded.h"
#include "kernels/quant_dot_tables.h"
#include "quant/blocks.h"
#include "quant/dot.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant_dot_decoded.cpp"
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

#include "kernels/quant_dot_float-inl.h"

#if HWY_TARGET != HWY_SCALAR
#include "kernels/quant_dot_common-inl.h"
#include "kernels/quant_dot_decoded-inl.h"
#endif
#include "kernels/quant_dot_iq4-inl.h"
#include "kernels/quant_dot_q3k-inl.h"
#include "kernels/quant_dot_q5k-inl.h"

#if HWY_TARGET == HWY_SCALAR
// Single-lane vectors: the scalar kernels' per-block sums, block by block.
template <class F, int K>
void DecodedSums(const typename F::Block* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  constexpr size_t kSlots = dot_tables::sum_slots(F::kMins ? 2 * K : K);
  for (int k = 0; k < K; ++k) {
    const auto* xk = reinterpret_cast<const typename F::XBlock*>(x + size_t(k) * x_stride);
    for (size_t b = 0; b < nb; ++b) {
      int32_t mins = 0;
      out->sums[b * kSlots + size_t(k)] = F::ScalarSums(w[b], xk[b], mins);
      if constexpr (F::kMins) out->sums[b * kSlots + size_t(K + k)] = mins;
    }
  }
  std::memset(out->sums + nb * kSlots, 0, kPad * sizeof(int32_t));
  F::Scales(w, nb, out);
}
#endif

#define PAGODA_DECODED_SUMS(Name, F)                                                    \
  template <int K>                                                                      \
  void Name(const F::Block* w, const uint8_t* x, size_t s, size_t nb, ChunkSums* out) { \
    DecodedSums<F, K>(w, x, s, nb, out);                                                \
  }
PAGODA_DECODED_SUMS(Q5_1Sums, FormatQ5_1)
PAGODA_DECODED_SUMS(IQ4NLSums, FormatIQ4NL)
PAGODA_DECODED_SUMS(MXFP4Sums, FormatMXFP4)
PAGODA_DECODED_SUMS(Q2KSums, FormatQ2K)
PAGODA_DECODED_SUMS(Q3KSums, FormatQ3K)
PAGODA_DECODED_SUMS(Q5KSums, FormatQ5K)
PAGODA_DECODED_SUMS(IQ4XSSums, FormatIQ4XS)
#undef PAGODA_DECODED_SUMS

PAGODA_DOT_ENTRY(OneRowManyTokensQ5_1, Q5_1Sums, BlockQ5_1, FormatQ5_1::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensIQ4NL, IQ4NLSums, BlockIQ4_NL, FormatIQ4NL::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensMXFP4, MXFP4Sums, BlockMXFP4, FormatMXFP4::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ2K, Q2KSums, BlockQ2_K, FormatQ2K::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ3K, Q3KSums, BlockQ3_K, FormatQ3K::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensQ5K, Q5KSums, BlockQ5_K, FormatQ5K::kTerms, 8)
PAGODA_DOT_ENTRY(OneRowManyTokensIQ4XS, IQ4XSSums, BlockIQ4_XS, FormatIQ4XS::kTerms, 8)
#undef PAGODA_DOT_ENTRY

void DecodedRowDots(TensorType t, const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, const float* xd,
                    float* acc) {
  switch (t) {
    case TensorType::Q5_1: return OneRowManyTokensQ5_1(w, x, x_stride, n_x, nb, xd, acc);
    case TensorType::IQ4_NL: return OneRowManyTokensIQ4NL(w, x, x_stride, n_x, nb, xd, acc);
    case TensorType::MXFP4: return OneRowManyTokensMXFP4(w, x, x_stride, n_x, nb, xd, acc);
    case TensorType::Q2_K: return OneRowManyTokensQ2K(w, x, x_stride, n_x, nb, xd, acc);
    case TensorType::Q3_K: return OneRowManyTokensQ3K(w, x, x_stride, n_x, nb, xd, acc);
    case TensorType::Q5_K: return OneRowManyTokensQ5K(w, x, x_stride, n_x, nb, xd, acc);
    default: return OneRowManyTokensIQ4XS(w, x, x_stride, n_x, nb, xd, acc);
  }
}

#if PAGODA_X86_VNNI512
template <class F>
void GroupDot(const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  const typename F::Block* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)  // rows past n_rows repeat the last; their outputs are dropped
    rows[r] = reinterpret_cast<const typename F::Block*>(static_cast<const uint8_t*>(w) +
                                                         size_t(std::min(r, n_rows - 1)) * w_stride);
  DecodedTokenGroupDot<F>(rows, g, out);
}

void DecodedTokenGroup(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  switch (t) {
    case TensorType::Q5_1: return GroupDot<FormatQ5_1>(w, w_stride, n_rows, g, out);
    case TensorType::IQ4_NL: return GroupDot<FormatIQ4NL>(w, w_stride, n_rows, g, out);
    case TensorType::MXFP4: return GroupDot<FormatMXFP4>(w, w_stride, n_rows, g, out);
    case TensorType::Q2_K: return GroupDot<FormatQ2K>(w, w_stride, n_rows, g, out);
    case TensorType::Q3_K: return GroupDot<FormatQ3K>(w, w_stride, n_rows, g, out);
    case TensorType::Q5_K: return GroupDot<FormatQ5K>(w, w_stride, n_rows, g, out);
    default: return GroupDot<FormatIQ4XS>(w, w_stride, n_rows, g, out);
  }
}
#else
void DecodedTokenGroup(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  token_group_dot_scalar(t, w, w_stride, n_rows, g, out);
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace pagoda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pagoda {

HWY_EXPORT(DecodedRowDots);
HWY_EXPORT(DecodedTokenGroup);

bool is_decoded_dot_type(TensorType t) {
  return t == TensorType::Q5_1 || t == TensorType::IQ4_NL || t == TensorType::MXFP4 || t == TensorType::Q2_K ||
         t == TensorType::Q3_K || t == TensorType::Q5_K || t == TensorType::IQ4_XS;
}

void decoded_row_dots(TensorType t, const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb,
                      const float* xd, float* acc) {
  HWY_DYNAMIC_DISPATCH(DecodedRowDots)(t, w, x, x_stride, n_x, nb, xd, acc);
}

void decoded_token_group_dot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g,
                             float* out) {
  HWY_DYNAMIC_DISPATCH(DecodedTokenGroup)(t, w, w_stride, n_rows, g, out);
}

}  // namespace pagoda
#endif  // HWY_ONCE
