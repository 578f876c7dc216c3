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
  template <int kChunk>
  static HWY_INLINE void DecodeChunk(const Block& w, uint8_t* codes) {
    const DC8 d;
    for (size_t l = 0; l < 32; l += hn::Lanes(d)) {
      const auto q = hn::LoadU(d, w.qs + 32 * kChunk + l), qh = hn::LoadU(d, w.qh + l);
      hn::Store(hn::Or(LowNibbles(q), BitTo<2 * kChunk, 4>(qh)), d, codes + 64 * kChunk + l);
      hn::Store(hn::Or(hn::ShiftRight<4>(q), BitTo<2 * kChunk + 1, 4>(qh)), d, codes + 64 * kChunk + 32 + l);
    }
  }
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    DecodeChunk<0>(w, dec.codes);
    DecodeChunk<1>(w, dec.codes);
    DecodeChunk<2>(w, dec.codes);
    DecodeChunk<3>(w, dec.codes);
    alignas(16) uint8_t bytes[16];  // scales 0-7, then mins 0-7 (Q4_K's packing)
    UnpackQ4KScaleBytes(w.scales, bytes);
    alignas(16) int16_t wide[16];
    WidenBytes(bytes, 0, wide);
    std::memcpy(dec.scales, wide, 16);
    std::memcpy(dec.mins, wide + 8, 16);
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
  // Codes of elements o .. o + N - 1 (N: DC8's lanes, 32 on x86, else 16):
  // low nibbles elements 0..15, high ones 16..31, each ored with its fifth bit.
  static HWY_INLINE hn::Vec<DC8> Codes(const Block& w, size_t o) {
    const DC8 d;
    hn::Vec<DC8> nibbles;
    if constexpr (hn::MaxLanes(DC8()) == 32) {
      const hn::Half<DC8> dh;
      const auto q = hn::LoadU(dh, w.qs);
      nibbles = hn::Combine(d, hn::ShiftRight<4>(q), LowNibbles(q));
    } else {
      const auto q = hn::LoadU(d, w.qs + o % 16);
      nibbles = o < 16 ? LowNibbles(q) : hn::ShiftRight<4>(q);
    }
    return hn::Or(nibbles, hn::IfThenElseZero(hn::LoadMaskBits(d, w.qh + o / 8), hn::Set(d, 16)));
  }
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    for (size_t o = 0; o < kElems; o += hn::Lanes(DC8())) hn::Store(Codes(w, o), DC8(), dec.codes + o);
  }
#endif
};
