// The 32-element formats Q4_0, Q5_0, Q8_0 against Q8_0 activations: one
// weight row x many tokens (LegacySums, LegacyTileSums), token groups
// (TokenGroupDotT) and, on AVX-512 VNNI, many rows x one token
// (ManyRowsOneTokenLegacy).
//
// Not a normal header: kernels/quant_dot.cpp includes it inside its
// per-target namespace (pagoda::HWY_NAMESPACE, once per foreach_target pass,
// on the non-scalar targets), after the primitives of
// quant_dot_common-inl.h; so it has no include guard and no includes.
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
inline constexpr uint8_t kCodeOffset = kFormat == Legacy::kQ8_0   ? 128
                                       : kFormat == Legacy::kQ5_0 ? 16
                                                                  : 8;

template <Legacy kFormat, class Block>
HWY_INLINE hn::Vec<DB8> UnsignedCodes(const Block& w) {
  const DB8 du8;
  if constexpr (kFormat == Legacy::kQ8_0) {
    return hn::Xor(hn::LoadU(du8, reinterpret_cast<const uint8_t*>(w.qs)), hn::Set(du8, 0x80));
  } else if constexpr (kFormat == Legacy::kQ5_0) {
    uint32_t fifth;  // bit i: code i's fifth bit (worth 16)
    std::memcpy(&fifth, w.qh, 4);
    return hn::Or(NibbleCodes(w.qs, 0), BytesWhere(fifth, 16));
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
      const auto c = UnsignedCodes<kFormat>(wg[g]);
      const hn::Vec512<uint8_t> codes = Concat256(c, c);
#pragma GCC unroll 4
      for (size_t p = 0; p < kPairs; ++p) {
        const auto lo = hn::LoadU(hn::Full256<int8_t>(), xg[2 * p][g].qs);
        const auto hi = hn::LoadU(hn::Full256<int8_t>(), xg[2 * p + 1][g].qs);
        const hn::Vec512<int8_t> xv = Concat256(lo, hi);
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
void ManyRowsOneTokenLegacy(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, float* acc,
                            size_t ahead) {
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
      const hn::Vec512<int8_t> xv = LoadDup256(xr[g].qs);
      const auto minus_offset = hn::Neg(MulAddQuads(hn::Zero(d32), offsets, xv));
      for (int p = 0; p < 2; ++p) {
        const auto lo = UnsignedCodes<kFormat>(wr[2 * p][g]);
        const auto hi = UnsignedCodes<kFormat>(wr[2 * p + 1][g]);
        const hn::Vec512<uint8_t> codes = Concat256(lo, hi);
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

#define PAGODA_MANY_ROWS_ONE_TOKEN(Name, kFormat, Block)                                                           \
  void Name(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* /*xd*/, float* acc, \
            size_t ahead) {                                                                                        \
    ManyRowsOneTokenLegacy<kFormat, Block>(w, w_stride, n_w, x, nb, acc, ahead);                                   \
  }
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ4_0, Legacy::kQ4_0, BlockQ4_0)
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ5_0, Legacy::kQ5_0, BlockQ5_0)
PAGODA_MANY_ROWS_ONE_TOKEN(ManyRowsOneTokenQ8_0, Legacy::kQ8_0, BlockQ8_0)
#undef PAGODA_MANY_ROWS_ONE_TOKEN
#endif  // PAGODA_X86_VNNI512
