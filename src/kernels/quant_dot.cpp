// SIMD kernels behind vec_dot_tile (kernels/quant_dot.h). Highway compiles the
// part between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE once per target
// (AVX2, AVX-512, AVX-512 VNNI, scalar fallback); the rest picks the target
// at run time and splits a tile into weight rows and chunks of blocks. The
// kernels of Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q5_K and IQ4_XS are in their own TU
// (quant_dot_decoded.cpp); vec_dot_tile and token_group_dot call them here.
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

#include "kernels/quant_dot_decoded.h"
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

#include "kernels/quant_dot_float-inl.h"

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

// ------------------------------------------------------------ entry points

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
// Elsewhere the scalar kernels, token by token (token_group_dot_scalar).
void TokenGroupDot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  token_group_dot_scalar(t, w, w_stride, n_rows, g, out);
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
template <class Block, class XBlock, int kMaxGroup = 8, class RowDots = OneRowManyTokensFn>
void dot_tile(RowDots row_dots, const void* w, size_t w_stride, int n_w, const void* x, size_t x_stride, int n_x,
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
    default: break;
  }
  // The formats decoded to bytes block by block: tiles for every shape (a
  // tile of one token serves decode; their blocks' sums are reduced several
  // blocks at a time, so no shape of its own pays).
  auto decoded = [t](const void* w_row, const uint8_t* x_rows, size_t stride, int n_rows, size_t nb, const float* xd,
                     float* acc) { decoded_row_dots(t, w_row, x_rows, stride, n_rows, nb, xd, acc); };
  switch (t) {
    case TensorType::Q5_1:
      return dot_tile<BlockQ5_1, BlockQ8_0>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQK, out, out_stride);
    case TensorType::IQ4_NL:
      return dot_tile<BlockIQ4_NL, BlockQ8_0>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQK, out, out_stride);
    case TensorType::MXFP4:
      return dot_tile<BlockMXFP4, BlockQ8_0>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQK, out, out_stride);
    case TensorType::Q2_K:
      return dot_tile<BlockQ2_K, BlockQ8_K>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQKK, out, out_stride);
    case TensorType::Q3_K:
      return dot_tile<BlockQ3_K, BlockQ8_K>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQKK, out, out_stride);
    case TensorType::Q5_K:
      return dot_tile<BlockQ5_K, BlockQ8_K>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQKK, out, out_stride);
    case TensorType::IQ4_XS:
      return dot_tile<BlockIQ4_XS, BlockQ8_K>(decoded, w, w_stride, n_w, x, x_stride, n_x, n / kQKK, out, out_stride);
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

// The group's activation rows put back together, then the scalar kernel per
// row and token (correct, for the tests and other CPUs; matmul takes the
// tiles there instead, see prefers_token_groups).
void token_group_dot_scalar(TensorType t, const void* w_rows, size_t w_stride, int n_rows, const TokenGroup& g,
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
    const void* x = x0.empty() ? static_cast<const void*>(xk.data()) : static_cast<const void*>(x0.data());
    for (int r = 0; r < n_rows; ++r)
      out_rows[kGroupTokens * r + k] =
          vec_dot_scalar(t, static_cast<const uint8_t*>(w_rows) + size_t(r) * w_stride, x, g.nb * elems);
  }
}

namespace {
bool has_token_group_dot(TensorType t) { return has_quantized_dot(t); }
}  // namespace

void token_group_dot(TensorType t, const void* w, size_t w_stride, int n_rows, const TokenGroup& g, float* out) {
  if (!has_token_group_dot(t)) fail<Unsupported>("no token-group dot product for {}", tensor_type_name(t));
  if (n_rows < 1 || n_rows > kDotRowsMax)
    fail<InvalidArgument>("token_group_dot takes 1 to {} weight rows, not {}", kDotRowsMax, n_rows);
  if (g.type != activation_type(t))
    fail<InvalidArgument>("{} weights take {} activations, not {}", tensor_type_name(t),
                          tensor_type_name(activation_type(t)), tensor_type_name(g.type));
  if (is_decoded_dot_type(t)) return decoded_token_group_dot(t, w, w_stride, n_rows, g, out);
  HWY_DYNAMIC_DISPATCH(TokenGroupDot)(t, w, w_stride, n_rows, g, out);
}

bool prefers_token_groups(TensorType t) { return has_token_group_dot(t) && simd_target_is_avx512_vnni(); }

bool simd_target_is_avx512_vnni() { return HWY_DYNAMIC_DISPATCH(IsAvx512Vnni)(); }
bool simd_target_is_x86_avx2() { return HWY_DYNAMIC_DISPATCH(IsX86Avx2)(); }

bool q4k_wide_vectors() { return dot_tables::q4k_wide; }
void set_q4k_wide_vectors(bool on) { dot_tables::q4k_wide = on; }

}  // namespace pagoda
#endif  // HWY_ONCE
