// Q6_K against Q8_K activations: one weight row x many tokens (Q6KSums), token
// groups (TokenGroupDotQ6K) and many rows x one token (ManyRowsOneTokenQ6K).
//
// Not a normal header: kernels/quant_dot.cpp includes it inside its
// per-target namespace (pagoda::HWY_NAMESPACE, once per foreach_target pass,
// on the non-scalar targets), after the primitives of
// quant_dot_common-inl.h; so it has no include guard and no includes.
// ------------------------------------------------------------------- Q6_K

template <int kShift, class V>
HWY_INLINE V TwoBits(V v) {
  return hn::And(hn::ShiftRight<kShift>(v), hn::Set(hn::DFromV<V>(), 3));
}

// Unsigned codes (0..63) of elements e .. e+N-1 of a Q6_K block (see q6_k_code).
HWY_INLINE hn::Vec<DU8> Q6KCodes(const BlockQ6_K& w, size_t e) {
  const DU8 d;
  const size_t h = e / 128;
#if PAGODA_DOT_WIDE
  // 64 elements: 32-element groups k = 2m and 2m+1 share ql's nibble half.
  const size_t m = (e / 64) % 2;
  const hn::Half<DU8> dh;
  const auto ql = hn::LoadU(d, w.ql + 64 * h);
  const auto qh = hn::LoadU(dh, w.qh + 32 * h);
  const auto low = m == 0 ? LowNibbles(ql) : hn::ShiftRight<4>(ql);
  const auto high =
      m == 0 ? hn::Combine(d, TwoBits<2>(qh), TwoBits<0>(qh)) : hn::Combine(d, TwoBits<6>(qh), TwoBits<4>(qh));
  return hn::Or(low, hn::ShiftLeft<4>(high));
#else
  const size_t r = e % 128, k = r / 32, l = r % 32;
  const auto ql = hn::LoadU(d, w.ql + 64 * h + l + 32 * (k & 1));
  const auto qh = hn::LoadU(d, w.qh + 32 * h + l);
  const auto low = k < 2 ? LowNibbles(ql) : hn::ShiftRight<4>(ql);
  const auto high = k == 0 ? TwoBits<0>(qh) : k == 1 ? TwoBits<2>(qh) : k == 2 ? TwoBits<4>(qh) : TwoBits<6>(qh);
  return hn::Or(low, hn::ShiftLeft<4>(high));
#endif
}

// out[k nb + b] = sum_j sc_j <q - 32, x_k>_j, the scalar kernel's `scaled`:
// computed as sum_j sc_j <q, x_k>_j - 32 sum_j sc_j bsum_j.
template <int K>
HWY_INLINE void Q6KBlock(const BlockQ6_K& w, const BlockQ8_K* const* xs, size_t b, hn::Vec<DI32>* slot) {
  const DU8 du8;
  const DI8 di8;
  const DI16 d16;
  const DI32 d32;
  const hn::CappedTag<int16_t, 16> dm16;
  const hn::Repartition<int32_t, decltype(dm16)> dm32;
  const hn::Rebind<int8_t, decltype(dm16)> dm8;
  const size_t N = hn::Lanes(du8);
  const hn::CappedTag<int16_t, 8> ds16;
  const hn::Rebind<int8_t, decltype(ds16)> ds8;
  alignas(16) int16_t scales[16];
  for (size_t i = 0; i < 16; i += hn::Lanes(ds16))
    hn::Store(hn::PromoteTo(ds16, hn::LoadU(ds8, w.scales + i)), ds16, scales + i);
  const hn::Vec<DI16> sc[2] = {hn::LoadDup128(d16, scales), hn::LoadDup128(d16, scales + 8)};
  hn::Vec<DI32> acc[2][K], acc2[K];  // even and odd vectors, as in Q4KSums
  for (int k = 0; k < K; ++k) acc[0][k] = acc[1][k] = acc2[k] = hn::Zero(d32);
  for (size_t e = 0; e < size_t(kQKK); e += N) {
    const size_t h = (e / N) % 2;
    const auto codes = Q6KCodes(w, e);
    const auto scale =
        hn::BitCast(d16, hn::TableLookupBytes(sc[e / 128], hn::LoadU(du8, dot_tables::kQ6KScaleIndex.data() + e)));
    for (int k = 0; k < K; ++k)
      acc[h][k] = MulAddWide(d32, MulPairs(codes, hn::LoadU(di8, xs[k][b].qs + e)), scale, acc[h][k], acc2[k]);
  }
  for (int k = 0; k < K; ++k) {
    auto oacc = hn::Zero(dm32), oacc2 = hn::Zero(dm32);
    for (size_t g = 0; g < 16; g += hn::Lanes(dm16))
      oacc = MulAddWide(dm32, hn::LoadU(dm16, xs[k][b].bsums + g), hn::PromoteTo(dm16, hn::LoadU(dm8, w.scales + g)),
                        oacc, oacc2);
    const auto codes_x = hn::Add(hn::Add(acc[0][k], acc[1][k]), acc2[k]);
    slot[k] = hn::Sub(codes_x, hn::ShiftLeft<5>(Widen(hn::Add(oacc, oacc2))));
  }
}

template <int K>
void Q6KSums(const BlockQ6_K* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  const BlockQ8_K* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const BlockQ8_K*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    Q6KBlock<K>(w[b], xs, b, slot);
    for (size_t i = K; i < kSlots; ++i) slot[i] = hn::Zero(DI32());
  });
  HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(BlockQ6_K, d), sizeof(BlockQ6_K), nb, out->w_d);
}

#if PAGODA_X86_VNNI512
// token_group_dot for Q6_K, as TokenGroupDotQ4K: each row's 256 six-bit
// codes unpacked to bytes, then per 16-code sub-block i the exact
// sc_i * (sum q x - 32 sum x) of the scalar kernel in 16 token lanes.
void TokenGroupDotQ6K(const BlockQ6_K* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  const hn::Full256<uint8_t> d8;
  const auto two_bits = hn::Set(d8, 3);
  GroupSums sums;
  alignas(64) uint8_t codes[R][kQKK];
  for (size_t b = 0; b < g.nb; ++b) {
    for (int r = 0; r < R; ++r)
      for (size_t h = 0; h < 2; ++h) {  // elements 128 h + l + 32 k, see block_dot_q6_k
        const auto lo = hn::LoadU(d8, w[r][b].ql + 64 * h), hi = hn::LoadU(d8, w[r][b].ql + 64 * h + 32);
        const auto qh = hn::LoadU(d8, w[r][b].qh + 32 * h);
        uint8_t* c = codes[r] + 128 * h;
        hn::Store(hn::Or(LowNibbles(lo), hn::ShiftLeft<4>(hn::And(qh, two_bits))), d8, c);
        hn::Store(hn::Or(LowNibbles(hi), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(qh), two_bits))), d8, c + 32);
        hn::Store(hn::Or(hn::ShiftRight<4>(lo), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(qh), two_bits))), d8,
                  c + 64);
        hn::Store(hn::Or(hn::ShiftRight<4>(hi), hn::ShiftLeft<4>(hn::ShiftRight<6>(qh))), d8, c + 96);
      }
    const int8_t* x = g.codes.data() + b * (kQKK / 4) * 64;
    const int32_t* xsums = g.sums.data() + b * 16 * kGroupTokens;
    hn::Vec512<int32_t> scaled[R];
    for (int r = 0; r < R; ++r) scaled[r] = hn::Zero(d32);
#pragma GCC unroll 2
    for (size_t i = 0; i < 16; ++i) {
      hn::Vec512<int32_t> acc[R];
      const auto offset = hn::ShiftLeft<5>(hn::LoadU(d32, xsums + kGroupTokens * i));  // 32 * sum x
      for (int r = 0; r < R; ++r) acc[r] = hn::Neg(offset);
      QuadDots<4, R>(codes[0] + 16 * i, kQKK, x + 64 * 4 * i, acc);
      for (int r = 0; r < R; ++r)
        scaled[r] = hn::Add(scaled[r], hn::Mul(acc[r], hn::Set(d32, int32_t(w[r][b].scales[i]))));
    }
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {  // x.d * d * scaled, as vec_dot_q6_k_q8_k
      const auto scale = Opaque(hn::Mul(xd, hn::Set(df, HalfToFloat(reinterpret_cast<const uint8_t*>(&w[r][b].d)))));
      sums.Add(r, hn::Mul(scale, hn::ConvertTo(df, scaled[r])));
    }
  }
  sums.Store(out);
}
#endif

// One token (decode) against n_w weight rows, as ManyRowsOneTokenQ4K: the rows' block
// sums reduced together, their running sums the lanes of one vector, each
// with the scalar kernel's d_x * d_w * scaled.
void ManyRowsOneTokenQ6K(const void* w, size_t w_stride, int n_w, const uint8_t* x, size_t nb, const float* xd,
                         float* acc, size_t ahead) {
  constexpr size_t kOut = HWY_MAX(hn::MaxLanes(DI32()), size_t(kDotRowsMax));  // SumEach writes whole vectors
  alignas(64) int32_t sums[kChunkBlocks * kDotRowsMax + kOut];
  alignas(64) uint16_t d[kChunkBlocks * kDotRowsMax];  // per block and row: the F16 d
  const BlockQ8_K* xs[1] = {reinterpret_cast<const BlockQ8_K*>(x)};
  const BlockQ6_K* rows[kDotRowsMax];
  for (int r = 0; r < kDotRowsMax; ++r)
    rows[r] =
        reinterpret_cast<const BlockQ6_K*>(static_cast<const uint8_t*>(w) + size_t(std::min(r, n_w - 1)) * w_stride);
  for (size_t b = 0; b < nb; ++b) {
    hn::Vec<DI32> v[kDotRowsMax];
#pragma GCC unroll 4
    for (int r = 0; r < kDotRowsMax; ++r) {
      if (r < n_w) {
        // Fetch ahead in software, as in ManyRowsOneTokenQ4K.
        const uint8_t* ahead_p = reinterpret_cast<const uint8_t*>(rows[r] + b) + ahead;
        for (size_t line = 0; line < sizeof(BlockQ6_K); line += 64) PrefetchL2(ahead_p + line);
        Q6KBlock<1>(rows[r][b], xs, b, v + r);
        std::memcpy(&d[kDotRowsMax * b + r], &rows[r][b].d, 2);
      } else {
        v[r] = hn::Zero(DI32());
        d[kDotRowsMax * b + r] = 0;
      }
    }
    SumEach<kDotRowsMax>(DI32(), v, sums + kDotRowsMax * b);
  }
  const hn::CappedTag<float, kDotRowsMax> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  alignas(16) float lanes[kDotRowsMax] = {};
  for (int r = 0; r < n_w; ++r) lanes[r] = acc[r];
  auto a = hn::Load(df, lanes);
  for (size_t b = 0; b < nb; ++b) {
    const auto wd = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(d + kDotRowsMax * b)));
    const auto s = hn::ConvertTo(df, hn::LoadU(di, sums + kDotRowsMax * b));
    a = hn::Add(a, Opaque(hn::Mul(hn::Mul(hn::Set(df, xd[dot_tables::kXdStride * b]), wd), s)));
  }
  hn::Store(a, df, lanes);
  for (int r = 0; r < n_w; ++r) acc[r] = lanes[r];
}
