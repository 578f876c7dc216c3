// Q3_K and Q2_K for the decoded kernels (quant_dot_decoded-inl.h): 16
// sub-blocks of 16, codes from 2-bit planes (per 128 elements, 32 bytes of
// qs hold 4 elements each, 32 apart), Q3_K's third bit from hmask.
//
// Not a normal header: kernels/quant_dot_decoded.cpp includes it inside its
// per-target namespace (every target; Decode only where the generic kernels
// run), so it has no include guard and no includes.

#if HWY_TARGET != HWY_SCALAR
// Codes of the 2-bit planes: elements 128 n + 32 s + l from bits 2s of byte
// 32 n + l of qs; with hmask, bit 4 n + s of hmask[l] adds 4.
template <bool kHigh, int kHalf>
HWY_INLINE void DecodeTwoBitPlanesHalf(const uint8_t* qs, const uint8_t* hmask, uint8_t* codes) {
  const DC8 d;
  const auto three = hn::Set(d, 3);
  for (size_t l = 0; l < 32; l += hn::Lanes(d)) {
    const auto q = hn::LoadU(d, qs + 32 * kHalf + l);
    hn::Vec<DC8> c[4] = {hn::And(q, three), hn::And(hn::ShiftRight<2>(q), three), hn::And(hn::ShiftRight<4>(q), three),
                         hn::ShiftRight<6>(q)};
    if constexpr (kHigh) {
      const auto hm = hn::LoadU(d, hmask + l);
      c[0] = hn::Or(c[0], BitTo<4 * kHalf, 2>(hm));
      c[1] = hn::Or(c[1], BitTo<4 * kHalf + 1, 2>(hm));
      c[2] = hn::Or(c[2], BitTo<4 * kHalf + 2, 2>(hm));
      c[3] = hn::Or(c[3], BitTo<4 * kHalf + 3, 2>(hm));
    }
    for (size_t s = 0; s < 4; ++s) hn::Store(c[s], d, codes + 128 * kHalf + 32 * s + l);
  }
}

template <bool kHigh>
HWY_INLINE void DecodeTwoBitPlanes(const uint8_t* qs, const uint8_t* hmask, uint8_t* codes) {
  DecodeTwoBitPlanesHalf<kHigh, 0>(qs, hmask, codes);
  DecodeTwoBitPlanesHalf<kHigh, 1>(qs, hmask, codes);
}
#endif

// Q3_K: codes 0..7 (value + 4), signed six-bit scales.
struct FormatQ3K {
  using Block = BlockQ3_K;
  using XBlock = BlockQ8_K;
  static constexpr size_t kElems = kQKK, kSub = 16;
  static constexpr bool kSigned = false, kMins = false;
  static constexpr int kCodeOffset = 4;
  static constexpr Terms kTerms = Terms::kQ6K;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& /*mins*/) { return block_dot_q3_k(w, x); }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.d));
    dmin = 0;
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    HalfScales(reinterpret_cast<const uint8_t*>(w) + offsetof(Block, d), sizeof(Block), nb, out->w_d);
  }
#if HWY_TARGET != HWY_SCALAR
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    DecodeTwoBitPlanes<true>(w.qs, w.hmask, dec.codes);
    // The 16 six-bit scales four at a time in 32-bit words (see q3_k_scale):
    // low nibbles from words 0 and 1, top two bits from word 2.
    uint32_t w0, w1, w2;
    std::memcpy(&w0, w.scales, 4);
    std::memcpy(&w1, w.scales + 4, 4);
    std::memcpy(&w2, w.scales + 8, 4);
    const uint32_t nib = 0x0F0F0F0F, two = 0x03030303;
    const uint32_t words[4] = {(w0 & nib) | (w2 & two) << 4, (w1 & nib) | ((w2 >> 2) & two) << 4,
                               ((w0 >> 4) & nib) | ((w2 >> 4) & two) << 4, ((w1 >> 4) & nib) | ((w2 >> 6) & two) << 4};
    alignas(16) uint8_t bytes[16];
    std::memcpy(bytes, words, 16);
    WidenBytes(bytes, 32, dec.scales);
  }
#endif
};

// Q2_K: codes 0..3, a four-bit scale and min per sub-block.
struct FormatQ2K {
  using Block = BlockQ2_K;
  using XBlock = BlockQ8_K;
  static constexpr size_t kElems = kQKK, kSub = 16;
  static constexpr bool kSigned = false, kMins = true;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kQ4K;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& mins) {
    int32_t scaled;
    block_dot_q2_k(w, x, scaled, mins);
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
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    DecodeTwoBitPlanes<false>(w.qs, nullptr, dec.codes);
    for (int j = 0; j < 16; ++j) {
      dec.scales[j] = int16_t(w.scales[j] & 0xF);
      dec.mins[j] = int16_t(w.scales[j] >> 4);
    }
  }
#endif
};
