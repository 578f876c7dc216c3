// Q5_K and Q5_1 for the decoded kernels (quant_dot_decoded-inl.h): a
// block's codes as bytes, nibble and fifth bit put together, its scales and
// mins as integers; and the float scales the kernels' float halves take.
//
// Not a normal header: kernels/quant_dot_decoded.cpp includes it inside its
// per-target namespace (every target; Decode only where the generic kernels
// run), so it has no include guard and no includes.

// Q5_K: Q4_K's 8 sub-blocks of 32 (scale and min), codes 0..31.
struct FormatQ5K {
  using Block = BlockQ5_K;
  using XBlock = BlockQ8_K;
  static constexpr size_t kElems = kQKK, kSub = 32;
  static constexpr bool kSigned = false, kMins = true;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kQ4K;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& mins) {
    int32_t scaled;
    block_dot_q5_k(w, x, scaled, mins);
    return scaled;
  }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.d));
    dmin = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.dmin));
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    const auto* wb = reinterpret_cast<const uint8_t*>(w);
    HalfScales(wb + offsetof(Block, d), sizeof(Block), nb, out->w_d);
    HalfScales(wb + offsetof(Block, dmin), sizeof(Block), nb, out->w_dmin);
  }
#if HWY_TARGET != HWY_SCALAR
  // Per 64 elements c: 32 bytes of nibbles (low: sub-block 2c, high: 2c + 1),
  // and bits 2c, 2c + 1 of qh's 32 bytes the fifth bits.
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    const DC8 d;
    const size_t N = hn::Lanes(d);
    const auto sixteen = hn::Set(d, 16);
    for (size_t c = 0; c < 4; ++c)
      for (size_t l = 0; l < 32; l += N) {
        const auto q = hn::LoadU(d, w.qs + 32 * c + l), qh = hn::LoadU(d, w.qh + l);
        const auto lo = hn::IfThenElseZero(hn::TestBit(qh, hn::Set(d, uint8_t(1u << (2 * c)))), sixteen);
        const auto hi = hn::IfThenElseZero(hn::TestBit(qh, hn::Set(d, uint8_t(2u << (2 * c)))), sixteen);
        hn::Store(hn::Or(LowNibbles(q), lo), d, dec.codes + 64 * c + l);
        hn::Store(hn::Or(hn::ShiftRight<4>(q), hi), d, dec.codes + 64 * c + 32 + l);
      }
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      unpack_q4_k_scale(w.scales, j, sc, m);
      dec.scales[j] = int16_t(sc);
      dec.mins[j] = int16_t(m);
    }
  }
#endif
};

// Q5_1: 32 elements, codes 0..31 and an offset m: the float half takes it
// as Q4_K's form with dmin = -m (d_x * (d * codes - (-m) * sum x), the
// scalar kernel's d_x * (d * codes + m * sum x) exactly).
struct FormatQ5_1 {
  using Block = BlockQ5_1;
  using XBlock = BlockQ8_0;
  static constexpr size_t kElems = kQK, kSub = 32;
  static constexpr bool kSigned = false, kMins = true;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kQ4K;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& x_sum) {
    int32_t codes;
    block_dot_q5_1(w, x, codes, x_sum);
    return codes;
  }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.d));
    dmin = -HalfToFloat(reinterpret_cast<const uint8_t*>(&w.m));
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    for (size_t b = 0; b < nb; ++b) BlockScales(w[b], out->w_d[b], out->w_dmin[b]);
  }
#if HWY_TARGET != HWY_SCALAR
  // Low nibbles elements 0..15, high ones 16..31, each ored with its fifth bit.
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    const D16B d;
    const auto q = hn::LoadU(d, w.qs), sixteen = hn::Set(d, 16);
    hn::Store(hn::Or(LowNibbles(q), hn::IfThenElseZero(hn::LoadMaskBits(d, w.qh), sixteen)), d, dec.codes);
    hn::Store(hn::Or(hn::ShiftRight<4>(q), hn::IfThenElseZero(hn::LoadMaskBits(d, w.qh + 2), sixteen)), d,
              dec.codes + 16);
  }
#endif
};
