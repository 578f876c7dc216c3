// IQ4_NL, IQ4_XS and MXFP4 for the decoded kernels (quant_dot_decoded-inl.h):
// each nibble looked up in the format's table (one byte shuffle per 16
// codes), the values kept signed (kSigned); IQ4_XS's six-bit sub-block
// scales less 32; MXFP4's E8M0 scale as a float (mxfp4_scale).
//
// Not a normal header: kernels/quant_dot_decoded.cpp includes it inside its
// per-target namespace (every target; Decode only where the generic kernels
// run), so it has no include guard and no includes.

#if HWY_TARGET != HWY_SCALAR
// The table values of elements o .. o + N - 1 of 32 (N: DC8's lanes, 32 on
// x86, else 16) from their 16 bytes of nibbles: the low nibbles elements
// 0..15, the high ones 16..31; one byte shuffle (the 16-value table in every
// 128-bit block).
HWY_INLINE hn::Vec<DC8> NibbleValues(const int8_t* values, const uint8_t* qs, size_t o) {
  const DC8 d;
  const auto table = hn::LoadDup128(d, reinterpret_cast<const uint8_t*>(values));
  if constexpr (hn::MaxLanes(DC8()) == 32) {
    const hn::Half<DC8> dh;
    const auto q = hn::LoadU(dh, qs);
    return hn::TableLookupBytes(table, hn::Combine(d, hn::ShiftRight<4>(q), LowNibbles(q)));
  } else {
    const auto q = hn::LoadU(d, qs + o % 16);
    return hn::TableLookupBytes(table, o < 16 ? LowNibbles(q) : hn::ShiftRight<4>(q));
  }
}
HWY_INLINE hn::Vec<DC8> IQ4Values(const uint8_t* qs, size_t o) { return NibbleValues(kIQ4NLValues, qs, o); }

// 32 elements' values at out (whole vectors: read back by vectors of the same size).
HWY_INLINE void DecodeNibbleValues(const int8_t* values, const uint8_t* qs, uint8_t* out) {
  for (size_t o = 0; o < 32; o += hn::Lanes(DC8())) hn::Store(NibbleValues(values, qs, o), DC8(), out + o);
}
HWY_INLINE void DecodeIQ4Nibbles(const uint8_t* qs, uint8_t* out) { DecodeNibbleValues(kIQ4NLValues, qs, out); }
#endif

struct FormatIQ4NL {
  using Block = BlockIQ4_NL;
  using XBlock = BlockQ8_0;
  static constexpr size_t kElems = kQK, kSub = 32;
  static constexpr bool kSigned = true, kMins = false;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kLegacy;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& /*mins*/) { return block_dot_iq4_nl(w, x); }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.d));
    dmin = 0;
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    HalfScales(reinterpret_cast<const uint8_t*>(w), sizeof(Block), nb, out->w_d);
  }
#if HWY_TARGET != HWY_SCALAR
  static HWY_INLINE hn::Vec<DC8> Codes(const Block& w, size_t o) { return IQ4Values(w.qs, o); }
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) { DecodeIQ4Nibbles(w.qs, dec.codes); }
#endif
};

struct FormatIQ4XS {
  using Block = BlockIQ4_XS;
  using XBlock = BlockQ8_K;
  static constexpr size_t kElems = kQKK, kSub = 32;
  static constexpr bool kSigned = true, kMins = false;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kQ6K;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& /*mins*/) { return block_dot_iq4_xs(w, x); }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = HalfToFloat(reinterpret_cast<const uint8_t*>(&w.d));
    dmin = 0;
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    HalfScales(reinterpret_cast<const uint8_t*>(w), sizeof(Block), nb, out->w_d);
  }
#if HWY_TARGET != HWY_SCALAR
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    for (int j = 0; j < 8; ++j) {
      DecodeIQ4Nibbles(w.qs + 16 * j, dec.codes + 32 * j);
      dec.scales[j] = int16_t(iq4_xs_scale(w, j));
    }
  }
#endif
};

// MXFP4: IQ4_NL's shape with its own table and an E8M0 scale.
struct FormatMXFP4 {
  using Block = BlockMXFP4;
  using XBlock = BlockQ8_0;
  static constexpr size_t kElems = kQK, kSub = 32;
  static constexpr bool kSigned = true, kMins = false;
  static constexpr int kCodeOffset = 0;
  static constexpr Terms kTerms = Terms::kLegacy;
  static int32_t ScalarSums(const Block& w, const XBlock& x, int32_t& /*mins*/) { return block_dot_mxfp4(w, x); }
  static void BlockScales(const Block& w, float& d, float& dmin) {
    d = mxfp4_scale(w.e);
    dmin = 0;
  }
  static void Scales(const Block* w, size_t nb, ChunkSums* out) {
    for (size_t b = 0; b < nb; ++b) out->w_d[b] = mxfp4_scale(w[b].e);
  }
#if HWY_TARGET != HWY_SCALAR
  static HWY_INLINE hn::Vec<DC8> Codes(const Block& w, size_t o) { return NibbleValues(kMXFP4Values, w.qs, o); }
  static HWY_INLINE void Decode(const Block& w, Decoded<kElems>& dec) {
    DecodeNibbleValues(kMXFP4Values, w.qs, dec.codes);
  }
#endif
};
