// Q4_K against Q8_K activations: one weight row x many tokens (Q4KSums), token
// groups (TokenGroupDotQ4K) and many rows x one token (ManyRowsOneTokenQ4K).
//
// Not a normal header: kernels/quant_dot.cpp includes it inside its
// per-target namespace (pagoda::HWY_NAMESPACE, once per foreach_target pass,
// on the non-scalar targets), after the primitives of
// quant_dot_common-inl.h; so it has no include guard and no includes.
// ------------------------------------------------------------------- Q4_K

#if PAGODA_DOT_X86
// x86, every target: 32-byte vectors. A 32-byte load of codes holds one
// sub-block in its low nibbles and the next in its high nibbles, in the
// activations' order, so each code vector needs no shuffle and has a single
// scale, which vpmaddwd / vpdpwssd take as a broadcast (sc, sc) pair of
// 16-bit lanes (a load, no shuffle either). 512-bit multiplies issue on two
// ports too (p0 and p5 on Sapphire Rapids), but the 64-byte layout needs its
// halves regrouped (128 elements per load) by shuffles on p5, which the
// reductions also use: measured slower than this on the 4-token tiles.

using DQ8 = hn::CappedTag<uint8_t, 32>;
using DQI8 = hn::CappedTag<int8_t, 32>;
using DQ16 = hn::CappedTag<int16_t, 16>;
using DQ32 = hn::CappedTag<int32_t, 8>;

// Block b of weight row w against activation rows xs[0..K-1]: slot[k] gets
// row k's partial sums of sum_j sc_j <q, x_k>_j (the scalar kernel's
// `scaled`), slot[K + k] those of sum_j m_j bsum_j (its `mins`).
// `pairs` holds the block's Q4KScalePairs.
template <int K>
HWY_INLINE void Q4KBlock(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                         hn::Vec<DQ32>* slot) {
  const DQ8 du8;
  const DQI8 di8;
  const DQ16 d16;
  const DQ32 d32;
  // Low and high nibbles accumulate apart (two chains of multiply-adds per
  // row); acc2 takes what ReorderWidenMulAccumulate spills on some targets.
  hn::Vec<DQ32> acc[2][K], acc2[K];
  for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
  for (size_t g = 0; g < size_t(kQKK) / 64; ++g) {
    const auto q = hn::LoadU(du8, w.qs + 32 * g);
    const hn::Vec<DQ8> codes[2] = {LowNibbles(q), hn::ShiftRight<4>(q)};
    for (size_t h = 0; h < 2; ++h) {
      const auto scale = hn::BitCast(d16, hn::Set(d32, pairs[2 * g + h]));
      for (int k = 0; k < K; ++k)
        acc[h][k] = MulAddWide(d32, MulPairs(codes[h], hn::LoadU(di8, xs[k][b].qs + 64 * g + 32 * h)), scale, acc[h][k],
                               acc2[k]);
    }
  }
  // bsum g pairs with min g / 2.
  const auto mins = hn::BitCast(d16, hn::Load(d32, pairs + 8));
  for (int k = 0; k < K; ++k) {
    auto macc = hn::Zero(d32), macc2 = hn::Zero(d32);
    macc = MulAddWide(d32, hn::LoadU(d16, xs[k][b].bsums), mins, macc, macc2);
    slot[k] = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
    slot[K + k] = hn::Add(macc, macc2);
  }
}

#if PAGODA_DOT_WIDE
// Q4KBlock in 512-bit vectors: a 64-byte load of codes holds 128 elements
// (sub-blocks 4g, 4g+2 in its low nibbles, 4g+1, 4g+3 in its high ones);
// two 128-bit-lane shuffles per load put them in the activations' order, and
// each 64-element vector takes two scales (one per half), picked from the
// block's pairs by a lane permute (Q4KWideScaled, x86/highway_ops-inl.h).
// Half the multiplies of Q4KBlock, plus four shuffles per 128 elements that
// every activation row shares.
template <int K>
HWY_INLINE void Q4KBlockWide(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                             hn::Vec<DQ32>* slot) {
  const DQ16 d16;
  const DQ32 d32;
  hn::Vec512<int32_t> acc[K];
  Q4KWideScaled<K>(w.qs, pairs, xs, b, acc);
  const auto mins = hn::BitCast(d16, hn::Load(d32, pairs + 8));
  for (int k = 0; k < K; ++k) {
    auto macc = hn::Zero(d32), macc2 = hn::Zero(d32);
    macc = MulAddWide(d32, hn::LoadU(d16, xs[k][b].bsums), mins, macc, macc2);
    slot[k] = AddHalves(acc[k]);
    slot[K + k] = hn::Add(macc, macc2);
  }
}
#endif

// The block kernel this CPU runs best (see dot_tables::q4k_wide).
template <int K>
HWY_INLINE void Q4KBlockBest(const BlockQ4_K& w, const int32_t* pairs, const BlockQ8_K* const* xs, size_t b,
                             hn::Vec<DQ32>* slot, bool wide) {
#if PAGODA_DOT_WIDE
  if (wide) return Q4KBlockWide<K>(w, pairs, xs, b, slot);
#endif
  (void)wide;
  Q4KBlock<K>(w, pairs, xs, b, slot);
}

// out[2 (k nb + b)] = sum_j sc_j <q, x_k>_j and out[... + 1] = sum_j m_j bsum_j
// of block b against activation row k: the scalar kernel's `scaled`, `mins`.
template <int K>
void Q4KSums(const BlockQ4_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(2 * K);
  const bool wide = dot_tables::q4k_wide;
  ForBlockGroups<kSlots, DQ32>(nb, out->sums, [&](size_t b, hn::Vec<DQ32>* slot) HWY_ATTR {
    alignas(64) int32_t pairs[16];
    Q4KScalePairs(w[b].scales, pairs);
    // Hide the stored pairs' values from the compiler, which would otherwise
    // extract each one with shuffles: reloaded, they are broadcast loads.
    asm("" : "+m"(pairs));
    Q4KBlockBest<K>(w[b], pairs, xs, b, slot, wide);
    for (size_t i = 2 * K; i < kSlots; ++i) slot[i] = hn::Zero(DQ32());
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, d), sizeof(BlockQ4_K), nb, out->w_d);
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, dmin), sizeof(BlockQ4_K), nb, out->w_dmin);
}

#if PAGODA_X86_VNNI512
// token_group_dot for Q4_K, 4 rows at a time as TokenGroupDotT: per
// super-block, each row's 256 codes unpacked to bytes in a stack buffer; each
// sub-block's quads broadcast against the 16 tokens' quads (vpdpbusd), then
// the exact `scaled` and `mins` of the scalar kernel as 16 token lanes
// (sub-block scale times sum; min times the tokens' 32-code sums), and its
// float expression in block order. 4 rows share each load of the tokens'
// quads: 2x the speed of one row at a time.
void TokenGroupDotQ4K(const BlockQ4_K* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  const hn::Full256<uint8_t> d8;
  constexpr size_t kSub = kQKK / kQK;  // 8 sub-blocks of 32
  GroupSums sums;
  alignas(64) uint8_t codes[R][kQKK];
  alignas(16) uint8_t sm[R][16];  // the 8 scales, then the 8 mins
  for (size_t b = 0; b < g.nb; ++b) {
    for (int r = 0; r < R; ++r) {
      for (size_t p = 0; p < kQKK / 64; ++p) {  // qs[32 p + i]: low nibble element 64 p + i, high 64 p + 32 + i
        const auto q = hn::LoadU(d8, w[r][b].qs + 32 * p);
        hn::Store(LowNibbles(q), d8, codes[r] + 64 * p);
        hn::Store(hn::ShiftRight<4>(q), d8, codes[r] + 64 * p + 32);
      }
      UnpackQ4KScaleBytes(w[r][b].scales, sm[r]);
    }
    const int8_t* x = g.codes.data() + b * (kQKK / 4) * 64;
    const int32_t* xsums = g.sums.data() + b * 2 * kSub * kGroupTokens;  // per 16 codes
    hn::Vec512<int32_t> scaled[R], mins[R];
    for (int r = 0; r < R; ++r) scaled[r] = mins[r] = hn::Zero(d32);
#pragma GCC unroll 2
    for (size_t j = 0; j < kSub; ++j) {
      hn::Vec512<int32_t> acc[R];
      for (int r = 0; r < R; ++r) acc[r] = hn::Zero(d32);
      QuadDots<kQK / 4, R>(codes[0] + kQK * j, kQKK, x + 64 * 8 * j, acc);
      const auto xs =
          hn::Add(hn::LoadU(d32, xsums + kGroupTokens * 2 * j), hn::LoadU(d32, xsums + kGroupTokens * (2 * j + 1)));
      for (int r = 0; r < R; ++r) {
        scaled[r] = hn::Add(scaled[r], hn::Mul(acc[r], hn::Set(d32, int32_t(sm[r][j]))));
        mins[r] = hn::Add(mins[r], hn::Mul(xs, hn::Set(d32, int32_t(sm[r][8 + j]))));
      }
    }
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q4_k_q8_k
      const auto a = Opaque(hn::Mul(hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].d))),
                                    hn::ConvertTo(df, scaled[r])));
      const auto m = Opaque(hn::Mul(hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].dmin))),
                                    hn::ConvertTo(df, mins[r])));
      sums.Add(r, hn::Mul(xd, Opaque(hn::Sub(a, m))));
    }
  }
  sums.Store(out);
}
#endif

// One token (decode): n_w weight rows at w + r * w_stride against one
// activation row, over nb blocks; acc[r] += the rows' block terms. A block's
// sums for all rows are reduced together (one vector per block, the rows'
// scaled and mins sums interleaved), and the float half runs the rows'
// running sums as lanes of one vector, with the scalar kernel's expression
// d_x * (d_w * scaled - dmin_w * mins) in each. Several weight rows stream at
// once, which also keeps more memory reads in flight.
void ManyRowsOneTokenQ4K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd,
                         float* acc, size_t ahead) {
  alignas(64) int32_t sums[kChunkBlocks * 8];
  alignas(64) uint32_t dm[kChunkBlocks * kDotRowsMax];  // per block and row: the F16 pair (d, dmin)
  const BlockQ8_K* xs[1] = {reinterpret_cast<const BlockQ8_K*>(x)};
  const BlockQ4_K* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)
    rows[r] =
        reinterpret_cast<const BlockQ4_K*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_w - 1)) * w_stride);
  // The scales of every block first, out of the main loop's dependency
  // chains (7% faster, weights in L2).
  alignas(64) int32_t pairs[kChunkBlocks][kDotRowsMax][16];
  const bool wide = dot_tables::q4k_wide;
  for (size_t b = 0; b < nb; ++b)
    for (int r = 0; r < n_w; ++r) Q4KScalePairs(rows[r][b].scales, pairs[b][r]);
  asm("" : "+m"(pairs));
  for (size_t b = 0; b < nb; ++b) {
    hn::Vec<DQ32> v[2 * kDotRowsMax];
#pragma GCC unroll 4
    for (int r = 0; r < kDotRowsMax; ++r) {
      if (r < n_w) {
        // Each row is read in a stream of rows (see matmul); fetch `ahead`
        // bytes on in that stream, which the hardware prefetcher alone does
        // too late (past the matrix's end is harmless: prefetches never fault).
        const uint8_t* ahead_p = reinterpret_cast<const uint8_t*>(rows[r] + b) + ahead;
        for (size_t line = 0; line < sizeof(BlockQ4_K); line += 64) PrefetchL2(ahead_p + line);
        Q4KBlockBest<1>(rows[r][b], pairs[b][r], xs, b, v + 2 * r, wide);
        std::memcpy(&dm[kDotRowsMax * b + r], &rows[r][b].d, 4);  // d, then dmin
      } else {
        v[2 * r] = v[2 * r + 1] = hn::Zero(DQ32());
        dm[kDotRowsMax * b + r] = 0;
      }
    }
    SumEach<2 * kDotRowsMax>(DQ32(), v, sums + 8 * b);
  }
  const hn::CappedTag<float, 8> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const hn::Repartition<uint64_t, decltype(df)> du64;
  alignas(32) float lanes[8] = {};  // row r's running sum in lane 2r
  for (int r = 0; r < n_w; ++r) lanes[2 * r] = acc[r];
  auto a = hn::Load(df, lanes);
  for (size_t b = 0; b < nb; ++b) {
    const auto scales = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(dm + kDotRowsMax * b)));
    const auto p = Opaque(hn::Mul(scales, hn::ConvertTo(df, hn::LoadU(di, sums + 8 * b))));  // d scaled, dmin mins
    const auto p_mins = hn::BitCast(df, hn::ShiftRight<32>(hn::BitCast(du64, p)));  // dmin mins in the even lanes
    a = hn::Add(a, Opaque(hn::Mul(hn::Set(df, xd[dot_tables::kXdStride * b]), hn::Sub(p, p_mins))));
  }
  hn::Store(a, df, lanes);
  for (int r = 0; r < n_w; ++r) acc[r] = lanes[2 * r];
}

#else  // PAGODA_DOT_X86

// The six-bit scales (lanes 0..7) and mins (lanes 8..15) of a Q4_K block,
// stored as 16-bit lanes for LoadDup128.
HWY_INLINE void UnpackQ4KScales(const uint8_t* s, int16_t* out) {
  alignas(16) uint8_t bytes[16];
  UnpackQ4KScaleBytes(s, bytes);
  const hn::CappedTag<int16_t, 8> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  for (size_t i = 0; i < 16; i += hn::Lanes(d16)) hn::Store(hn::PromoteTo(d16, hn::LoadU(d8, bytes + i)), d16, out + i);
}

// Codes (0..15) of elements e .. e+2N-1 of a Q4_K block as two vectors: per
// 64 elements, 32 bytes whose low nibbles are the first 32 and high nibbles
// the next 32.
HWY_INLINE void Q4KCodes(const uint8_t* qs, size_t e, hn::Vec<DU8>* codes) {
  const DU8 d;
  const size_t N = hn::Lanes(d);
  for (size_t h = 0; h < 2; ++h) {
    const size_t o = (e + h * N) % 64;
    const auto q = hn::LoadU(d, qs + (e + h * N) / 64 * 32 + o % 32);
    codes[h] = o < 32 ? LowNibbles(q) : hn::ShiftRight<4>(q);
  }
}

// out[2 (k nb + b)] = sum_j sc_j <q, x_k>_j and out[... + 1] = sum_j m_j bsum_j
// of block b against activation row k: the scalar kernel's `scaled`, `mins`.
template <int K>
void Q4KSums(const BlockQ4_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const DU8 du8;
  const DI8 di8;
  const DI16 d16;
  const DI32 d32;
  const hn::CappedTag<int16_t, 16> dm16;  // the 16 bsums
  const hn::Repartition<int32_t, decltype(dm16)> dm32;
  const hn::Repartition<uint8_t, decltype(dm16)> dm8;
  const size_t N = hn::Lanes(du8);
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(2 * K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    alignas(16) int16_t scales[16];
    UnpackQ4KScales(w[b].scales, scales);
    const auto sc = hn::LoadDup128(d16, scales);
    const auto mins = hn::LoadDup128(dm16, scales + 8);
    // Two accumulators per row (even and odd vectors) halve the chain of
    // dependent multiply-adds per block; acc2 takes what ReorderWiden-
    // MulAccumulate spills on some targets.
    hn::Vec<DI32> acc[2][K], acc2[K];
    for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
    for (size_t e = 0; e < size_t(kQKK); e += 2 * N) {
      hn::Vec<DU8> codes[2];
      Q4KCodes(w[b].qs, e, codes);
      for (size_t h = 0; h < 2; ++h) {
        const size_t eh = e + h * N;
        const auto scale =
            hn::BitCast(d16, hn::TableLookupBytes(sc, hn::LoadU(du8, dot_tables::kQ4KScaleIndex.data() + eh)));
        for (int k = 0; k < K; ++k)
          acc[h][k] = MulAddWide(d32, MulPairs(codes[h], hn::LoadU(di8, xs[k][b].qs + eh)), scale, acc[h][k], acc2[k]);
      }
    }
    constexpr size_t kMinSteps = 16 / hn::MaxLanes(dm16) > 0 ? 16 / hn::MaxLanes(dm16) : 1;
    hn::Vec<decltype(dm16)> m[kMinSteps];
    const size_t G = hn::Lanes(dm16);
    for (size_t g = 0; g < 16; g += G)
      m[g / G] = hn::BitCast(dm16, hn::TableLookupBytes(mins, hn::LoadU(dm8, dot_tables::kQ4KMinIndex.data() + 2 * g)));
    // Slot k: row k's scaled sum; slot K + k: its mins.
    for (int k = 0; k < K; ++k) {
      auto macc = hn::Zero(dm32), macc2 = hn::Zero(dm32);
      for (size_t g = 0; g < 16; g += G)
        macc = MulAddWide(dm32, hn::LoadU(dm16, xs[k][b].bsums + g), m[g / G], macc, macc2);
      slot[k] = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
      slot[K + k] = Widen(hn::Add(macc, macc2));
    }
    for (size_t i = 2 * K; i < kSlots; ++i) slot[i] = hn::Zero(d32);
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, d), sizeof(BlockQ4_K), nb, out->w_d);
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ4_K, dmin), sizeof(BlockQ4_K), nb, out->w_dmin);
}

#endif  // PAGODA_DOT_X86
