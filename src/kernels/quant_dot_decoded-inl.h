// The generic kernels of the formats decoded block by block (Q5_1, IQ4_NL,
// Q2_K, Q3_K, Q5_K, IQ4_XS): a format's Decode writes a block's codes as bytes
// (unsigned, or for kSigned formats the int8 values) and its sub-block
// scales and mins as small integers; these kernels multiply the bytes with
// the activations. One weight row x many tokens (DecodedSums, every target);
// token groups (DecodedTokenGroupDot, AVX-512 VNNI). Every sum is the scalar
// kernel's exact integer, every float expression the scalar kernel's.
//
// Not a normal header: kernels/quant_dot_decoded.cpp includes it inside its
// per-target namespace (non-scalar targets), after quant_dot_common-inl.h
// and quant_dot_float-inl.h; so it has no include guard and no includes.

// 32-byte vectors on every x86 target (AVX-512 included: a decoded block is
// stored and loaded again at that width, which store forwarding serves), at
// most 16 bytes elsewhere.
using DC8 = hn::CappedTag<uint8_t, 32>;
using DCI8 = hn::Repartition<int8_t, DC8>;
using DC16 = hn::Repartition<int16_t, DC8>;
using DC32 = hn::Repartition<int32_t, DC8>;
using D16B = hn::CappedTag<uint8_t, 16>;  // one 16-byte run of nibbles

// Bit kFrom of every byte of v at bit kTo, the others cleared (shifts: a
// bit test and masked move per byte ran at half the speed).
template <int kFrom, int kTo, class V>
HWY_INLINE V BitTo(V v) {
  const auto moved = [&] {
    if constexpr (kFrom >= kTo) {
      return hn::ShiftRight<kFrom - kTo>(v);
    } else {
      return hn::ShiftLeft<kTo - kFrom>(v);
    }
  }();
  return hn::And(moved, hn::Set(hn::DFromV<V>(), uint8_t(1u << kTo)));
}

template <size_t kElems>
struct Decoded {
  alignas(32) uint8_t codes[kElems];  // unsigned codes, or int8 values (kSigned)
  alignas(16) int16_t scales[16];     // sub-block j's integer scale (8 of them for 32-element sub-blocks)
  alignas(16) int16_t mins[16];       // sub-block j's integer min (kMins formats with sub-blocks)
};

// 16 bytes as int16 at out (sub-block scales and mins for the kernels'
// 16-bit multiplies), less `offset`.
HWY_INLINE void WidenBytes(const uint8_t* bytes, int16_t offset, int16_t* out) {
  const hn::CappedTag<int16_t, 8> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  for (size_t i = 0; i < 16; i += hn::Lanes(d16))
    hn::Store(hn::Sub(hn::BitCast(d16, hn::PromoteTo(hn::RebindToUnsigned<decltype(d16)>(), hn::LoadU(d8, bytes + i))),
                      hn::Set(d16, offset)),
              d16, out + i);
}

// a[i] * b[i] summed in adjacent pairs as int16: unsigned codes directly;
// int8 values (|v| <= 127) as |v| times b with v's sign, so a pair stays
// within int16 (vpmaddubsw saturates).
template <bool kSigned>
HWY_INLINE hn::Vec<DC16> CodePairs(hn::Vec<DC8> codes, hn::Vec<DCI8> x) {
  if constexpr (kSigned) {
    const DCI8 di8;
    const auto v = hn::BitCast(di8, codes);
    return MulPairs(hn::BitCast(DC8(), hn::Abs(v)), hn::IfThenElse(hn::Lt(v, hn::Zero(di8)), hn::Neg(x), x));
  } else {
    return MulPairs(codes, x);
  }
}

// The sums of block b (decoded as dec) against activation rows xs[k]:
// scaled[k] = sum_j sc_j <value, x_k>_j (values are codes less kCodeOffset),
// mins[k] = sum_j m_j (sum of x_k)_j; 32-element formats (Q8_0 activations,
// one scale of 1, codes from F::Codes, not dec) give <value, x_k> and, with
// kMins, the activations' sum.
template <class F, int K>
HWY_INLINE void DecodedDot(const typename F::Block& w, const Decoded<F::kElems>& dec,
                           const typename F::XBlock* const* xs, size_t b, hn::Vec<DC32>* scaled, hn::Vec<DC32>* mins) {
  const DC8 du8;
  const DCI8 di8;
  const DC16 d16;
  const DC32 d32;
  const size_t N = hn::Lanes(du8);
  hn::Vec<DC32> acc[K], acc2[K];  // acc2 takes what ReorderWidenMulAccumulate spills on some targets
  for (int k = 0; k < K; ++k) acc[k] = acc2[k] = hn::Zero(d32);
  if constexpr (F::kElems == size_t(kQK)) {
    const auto ones = hn::Set(d16, 1);
    hn::Vec<DC32> m[K], m2[K];
    for (int k = 0; k < K; ++k) m[k] = m2[k] = hn::Zero(d32);
    for (size_t o = 0; o < size_t(kQK); o += N) {
      const auto codes = F::Codes(w, o);  // in registers: a 32-byte reload of two 16-byte stores would stall
      for (int k = 0; k < K; ++k) {
        const auto xv = hn::LoadU(di8, xs[k][b].qs + o);
        acc[k] = MulAddWide(d32, CodePairs<F::kSigned>(codes, xv), ones, acc[k], acc2[k]);
        if constexpr (F::kMins) m[k] = MulAddWide(d32, MulPairs(hn::Set(du8, 1), xv), ones, m[k], m2[k]);
      }
    }
    for (int k = 0; k < K; ++k) {
      scaled[k] = hn::Add(acc[k], acc2[k]);
      if constexpr (F::kMins) mins[k] = hn::Add(m[k], m2[k]);
    }
  } else {
    // The sub-block scales spread over the pair products' 16-bit lanes by a
    // byte shuffle within each 128-bit block (as Q4KSums and Q6KBlock).
    constexpr bool k16 = F::kSub == 16;
    const hn::Vec<DC16> sc[2] = {hn::LoadDup128(d16, dec.scales), hn::LoadDup128(d16, dec.scales + (k16 ? 8 : 0))};
    const uint8_t* index = k16 ? dot_tables::kQ6KScaleIndex.data() : dot_tables::kQ4KScaleIndex.data();
    for (size_t e = 0; e < size_t(kQKK); e += N) {
      const auto codes = hn::Load(du8, dec.codes + e);
      const auto scale = hn::BitCast(d16, hn::TableLookupBytes(sc[k16 ? e / 128 : 0], hn::LoadU(du8, index + e)));
      for (int k = 0; k < K; ++k)
        acc[k] = MulAddWide(d32, CodePairs<F::kSigned>(codes, hn::LoadU(di8, xs[k][b].qs + e)), scale, acc[k], acc2[k]);
    }
    // Per 16-element group g of the activations (their bsums): the code
    // offset's share (kCodeOffset x its sub-block's scale) and its min.
    alignas(32) int16_t offsets[16], group_mins[16];
    for (int g = 0; g < 16; ++g) {
      const int j = k16 ? g : g / 2;
      offsets[g] = int16_t(F::kCodeOffset * dec.scales[j]);
      group_mins[g] = F::kMins ? dec.mins[j] : 0;
    }
    const size_t G = hn::Lanes(d16);
    for (int k = 0; k < K; ++k) {
      auto o = hn::Zero(d32), o2 = hn::Zero(d32), m = hn::Zero(d32), m2 = hn::Zero(d32);
      for (size_t g = 0; g < 16; g += G) {
        const auto bsums = hn::LoadU(d16, xs[k][b].bsums + g);
        if constexpr (F::kCodeOffset != 0) o = MulAddWide(d32, bsums, hn::Load(d16, offsets + g), o, o2);
        if constexpr (F::kMins) m = MulAddWide(d32, bsums, hn::Load(d16, group_mins + g), m, m2);
      }
      scaled[k] = hn::Sub(hn::Add(acc[k], acc2[k]), hn::Add(o, o2));
      if constexpr (F::kMins) mins[k] = hn::Add(m, m2);
    }
  }
}

// One weight row against K activation rows: per block the scaled sums (slot
// k) and, with kMins, the mins (slot K + k), as AddTerms<F::kTerms> reads them.
template <class F, int K>
void DecodedSums(const typename F::Block* w, const uint8_t* x, size_t x_stride, size_t nb, ChunkSums* out) {
  using XBlock = typename F::XBlock;
  const XBlock* xs[K];
  for (int k = 0; k < K; ++k) xs[k] = reinterpret_cast<const XBlock*>(x + size_t(k) * x_stride);
  constexpr size_t kSlots = dot_tables::sum_slots(F::kMins ? 2 * K : K);
  ForBlockGroups<kSlots>(nb, out->sums, [&](size_t b, hn::Vec<DI32>* slot) HWY_ATTR {
    Decoded<F::kElems> dec;
    if constexpr (F::kElems != size_t(kQK)) F::Decode(w[b], dec);
    hn::Vec<DC32> scaled[K], mins[K];
    DecodedDot<F, K>(w[b], dec, xs, b, scaled, mins);
    for (int k = 0; k < K; ++k) {
      slot[k] = Widen(scaled[k]);
      if constexpr (F::kMins) slot[K + k] = Widen(mins[k]);
    }
    for (size_t i = F::kMins ? 2 * K : K; i < kSlots; ++i) slot[i] = hn::Zero(DI32());
  });
  F::Scales(w, nb, out);
}

#if PAGODA_X86_VNNI512
// token_group_dot: per block each of the 4 rows decoded (codes made unsigned
// for vpdpbusd: int8 values + 128), then per sub-block i each 4-code quad
// broadcast against the 16 tokens' quads (QuadDots), the code offset's share
// (offset x the tokens' sums) taken off, times the row's scale; the float
// half is the scalar kernel's expression in 16 token lanes.
template <class F>
void DecodedTokenGroupDot(const typename F::Block* const* w, const TokenGroup& g, float* out) {
  static_assert(kGroupTokens == 16);
  constexpr int R = kDotRowsMax;
  constexpr size_t kElems = F::kElems, kSub = F::kElems == size_t(kQK) ? size_t(kQK) : F::kSub;
  constexpr int32_t kOffset = F::kSigned ? 128 : F::kCodeOffset;
  constexpr size_t kParts = kElems == size_t(kQKK) ? 16 : 1;  // the group's code sums per block
  const hn::Full512<int32_t> d32;
  const hn::Full512<float> df;
  GroupSums sums;
  Decoded<kElems> dec[R];
  for (size_t b = 0; b < g.nb; ++b) {
    for (int r = 0; r < R; ++r) {
      F::Decode(w[r][b], dec[r]);
      if constexpr (F::kSigned)
        for (size_t e = 0; e < kElems; e += 32)
          hn::Store(hn::Xor(hn::Load(DC8(), dec[r].codes + e), hn::Set(DC8(), 0x80)), DC8(), dec[r].codes + e);
    }
    const int8_t* x = g.codes.data() + b * (kElems / 4) * 64;
    const int32_t* xsums = g.sums.data() + b * kParts * kGroupTokens;
    hn::Vec512<int32_t> scaled[R], mins[R];
    for (int r = 0; r < R; ++r) scaled[r] = mins[r] = hn::Zero(d32);
    for (size_t i = 0; i < kElems / kSub; ++i) {
      auto s = hn::LoadU(d32, xsums + kGroupTokens * (kSub / 16) * i);  // the tokens' sums over sub-block i
      if constexpr (kSub == 32 && kParts == 16) s = hn::Add(s, hn::LoadU(d32, xsums + kGroupTokens * (2 * i + 1)));
      hn::Vec512<int32_t> acc[R];
      for (int r = 0; r < R; ++r) acc[r] = hn::Neg(hn::Mul(s, hn::Set(d32, kOffset)));
      QuadDots<kSub / 4, R>(dec[0].codes + kSub * i, sizeof(Decoded<kElems>), x + 64 * (kSub / 4) * i, acc);
      for (int r = 0; r < R; ++r) {
        if constexpr (kElems == size_t(kQK)) {
          scaled[r] = acc[r];
          if constexpr (F::kMins) mins[r] = s;
        } else {
          scaled[r] = hn::Add(scaled[r], hn::Mul(acc[r], hn::Set(d32, int32_t(dec[r].scales[i]))));
          if constexpr (F::kMins) mins[r] = hn::Add(mins[r], hn::Mul(s, hn::Set(d32, int32_t(dec[r].mins[i]))));
        }
      }
    }
    const auto xd = hn::LoadU(df, g.scales.data() + kGroupTokens * b);
    for (int r = 0; r < R; ++r) {
      float wd, wmin;
      F::BlockScales(w[r][b], wd, wmin);
      const auto s = hn::ConvertTo(df, scaled[r]);
      if constexpr (F::kTerms == Terms::kLegacy) {  // d_w * d_x * s
        sums.Add(r, hn::Mul(Opaque(hn::Mul(hn::Set(df, wd), xd)), s));
      } else if constexpr (F::kTerms == Terms::kQ6K) {  // d_x * d_w * s
        sums.Add(r, hn::Mul(Opaque(hn::Mul(xd, hn::Set(df, wd))), s));
      } else {  // d_x * (d_w * scaled - dmin_w * mins)
        const auto m = hn::ConvertTo(df, mins[r]);
        sums.Add(r, hn::Mul(xd, hn::Sub(Opaque(hn::Mul(hn::Set(df, wd), s)), Opaque(hn::Mul(hn::Set(df, wmin), m)))));
      }
    }
  }
  sums.Store(out);
}
#endif  // PAGODA_X86_VNNI512
