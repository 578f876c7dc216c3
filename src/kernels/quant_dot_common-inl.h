// The primitives of the quantized dot kernels: byte-pair and quad multiplies
// (raw x86 instructions where Highway 1.0.3 has none, see README.md), the
// transposing reductions of many vectors at once, and the block-group loop.
//
// Not a normal header: kernels/quant_dot.cpp includes it inside its
// per-target namespace (pagoda::HWY_NAMESPACE, once per foreach_target pass,
// on the non-scalar targets); so it has no include guard and no includes.

#if PAGODA_X86_AVX512
#define PAGODA_DOT_X86 1
#define PAGODA_DOT_WIDE 1  // 64-byte vectors
#elif PAGODA_X86_AVX2
#define PAGODA_DOT_X86 1
#define PAGODA_DOT_WIDE 0
#else
#define PAGODA_DOT_X86 0
#define PAGODA_DOT_WIDE 0
#endif

// Vectors of at most kBytes: 64 on AVX-512, 32 elsewhere (the generic code
// paths assume a vector never spans more than one 32-element group).
constexpr size_t kBytes = PAGODA_DOT_WIDE ? 64 : 32;
using DU8 = hn::CappedTag<uint8_t, kBytes>;
using DI8 = hn::CappedTag<int8_t, kBytes>;
using DI16 = hn::CappedTag<int16_t, kBytes / 2>;
using DI32 = hn::CappedTag<int32_t, kBytes / 4>;

// ---------------------------------------------------------------- primitives

// Sum of adjacent pairs of products a[i] * b[i] (a unsigned, b signed) as
// 16-bit lanes. The callers keep every pair sum within int16. On x86:
// vpmaddubsw (x86/highway_ops-inl.h).
#if !PAGODA_DOT_X86
template <class VU8, class VI8>
HWY_INLINE auto MulPairs(VU8 a, VI8 b) {
  const hn::DFromV<VI8> d8;
  const hn::RepartitionToWide<decltype(d8)> d16;
  const hn::RebindToUnsigned<decltype(d16)> du16;
  const auto a_even = hn::BitCast(d16, hn::And(hn::BitCast(du16, a), hn::Set(du16, 0xFF)));
  const auto a_odd = hn::BitCast(d16, hn::ShiftRight<8>(hn::BitCast(du16, a)));
  const auto b_even = hn::ShiftRight<8>(hn::ShiftLeft<8>(hn::BitCast(d16, b)));  // sign-extends
  const auto b_odd = hn::ShiftRight<8>(hn::BitCast(d16, b));
  return hn::Add(hn::Mul(a_even, b_even), hn::Mul(a_odd, b_odd));
}
#endif

// acc += pairwise a[i] * b[i] widened to 32 bits (the pair order within
// the 32-bit lanes is unspecified off x86; only the lanes' total matters).
template <class D32, class V16>
HWY_INLINE hn::Vec<D32> MulAddWide(D32 d32, V16 a, V16 b, hn::Vec<D32> acc, hn::Vec<D32>& acc2) {
#if PAGODA_X86_VNNI512
  return MulAddPairsVnni(acc, a, b);  // vpdpwssd: the multiply-add in one instruction
#endif
  return hn::ReorderWidenMulAccumulate(d32, a, b, acc, acc2);
}

// MulAddQuads (vpdpbusd, AVX-512 VNNI): x86/highway_ops-inl.h.

template <class D32>
HWY_INLINE int32_t ReduceSum(D32 d32, hn::Vec<D32> v) {
  return hn::GetLane(hn::SumOfLanes(d32, v));
}

// out[i] = the sum of the lanes of v[i] for i < M (a power of two): pairs
// of vectors are folded into one (each keeping half its lanes' sums), then
// the survivor folds onto itself; far fewer shuffles than M reductions.
// Writes max(M, lanes) values (the ones past M are junk).
template <size_t M, class D32>
HWY_INLINE void SumEach(D32 d32, hn::Vec<D32>* v, int32_t* out) {
  constexpr size_t N = hn::MaxLanes(D32());
  if constexpr (M == 1 || N == 1) {
    for (size_t i = 0; i < M; ++i) out[i] = ReduceSum(d32, v[i]);
  } else if constexpr (M > N) {  // a whole vector of sums at a time
    for (size_t i = 0; i < M; i += N) SumEach<N>(d32, v + i, out + i);
  } else {
    for (size_t m = M; m > 1; m /= 2)
      for (size_t i = 0; i < m / 2; ++i)
        v[i] = hn::Add(hn::ConcatEven(d32, v[2 * i + 1], v[2 * i]), hn::ConcatOdd(d32, v[2 * i + 1], v[2 * i]));
    auto r = v[0];
    for (size_t group = N / M; group > 1; group /= 2) r = hn::Add(hn::ConcatEven(d32, r, r), hn::ConcatOdd(d32, r, r));
    hn::StoreU(r, d32, out);
  }
}

// Runs body(b, slots) for every block b < nb, which sets the block's kSlots
// vectors of 32-bit partial sums, and writes every block's kSlots sums to
// out in block order, reducing a group of blocks at a time (as many as one
// vector has lanes for). The blocks of a group are unrolled so their slot
// vectors stay in registers. Zeroes kPad ints after the last block's sums
// (the float half reads whole vectors there).
// The vectors are of D32 (full width unless a kernel asks for less).
template <size_t kSlots, class D32 = DI32, class Body>
HWY_INLINE void ForBlockGroups(size_t nb, int32_t* out, const Body& body) {
  constexpr size_t kLanes = hn::MaxLanes(D32());
  constexpr size_t kGroup = kSlots >= kLanes ? 1 : kLanes / kSlots;
  for (size_t b0 = 0; b0 < nb; b0 += kGroup) {
    hn::Vec<D32> v[kGroup * kSlots];
#pragma GCC unroll 16
    for (size_t g = 0; g < kGroup; ++g) {
      if (b0 + g < nb) {
        body(b0 + g, v + g * kSlots);
      } else {
        for (size_t i = 0; i < kSlots; ++i) v[g * kSlots + i] = hn::Zero(D32());
      }
    }
    SumEach<kGroup * kSlots>(D32(), v, out + b0 * kSlots);
  }
  std::memset(out + nb * kSlots, 0, dot_tables::kPad * sizeof(int32_t));
}

// A vector of 32-bit sums as a full-width one (zero above): the 16 bsums'
// products, and the 32-element blocks' sums, are half-width on AVX-512.
template <class V>
HWY_INLINE hn::Vec<DI32> Widen(V v) {
  if constexpr (sizeof(V) == sizeof(hn::Vec<DI32>)) {
    return v;
  } else {
    return hn::ZeroExtendVector(DI32(), v);
  }
}

template <class V>
HWY_INLINE V LowNibbles(V v) {
  return hn::And(v, hn::Set(hn::DFromV<V>(), 0xF));
}

// The six-bit scales (bytes 0..7) and mins (bytes 8..15) of a Q4_K (or Q5_K) block.
// Scalar on purpose: the vector ports are the kernels' bottleneck, the
// integer ones are idle.
HWY_INLINE void UnpackQ4KScaleBytes(const uint8_t* s, uint8_t* bytes) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  // See unpack_q4_k_scale: bytes 0-3 of each word are sub-blocks 0-3 / 4-7.
  const uint32_t sc_lo = w0 & 0x3F3F3F3F, m_lo = w1 & 0x3F3F3F3F;
  const uint32_t sc_hi = (w2 & 0x0F0F0F0F) | ((w0 >> 6) & 0x03030303) << 4;
  const uint32_t m_hi = ((w2 >> 4) & 0x0F0F0F0F) | ((w1 >> 6) & 0x03030303) << 4;
  // Two 8-byte stores, read back by 8-byte loads: store forwarding works
  // only when a load takes its bytes from a single store.
  const uint64_t sc = sc_lo | uint64_t(sc_hi) << 32, m = m_lo | uint64_t(m_hi) << 32;
  std::memcpy(bytes, &sc, 8);
  std::memcpy(bytes + 8, &m, 8);
}

#if PAGODA_X86_VNNI512
// The 4 weight rows' running sums of a token group, 16 token lanes each: each
// block's term added in block order, as the scalar kernels' `sum +=`.
struct GroupSums {
  hn::Vec512<float> sum[kDotRowsMax];
  GroupSums() {
    for (auto& s : sum) s = hn::Zero(hn::Full512<float>());
  }
  HWY_INLINE void Add(int r, hn::Vec512<float> term) { sum[r] = hn::Add(sum[r], Opaque(term)); }
  void Store(float* out) const {
    for (int r = 0; r < kDotRowsMax; ++r) hn::StoreU(sum[r], hn::Full512<float>(), out + kGroupTokens * r);
  }
};

// The token groups' inner loop: acc[r] += the products of kQuads 4-code quads
// of row r's unsigned codes (at codes + r * row_stride) with the 16 tokens'
// quads at x (64 bytes each), every quad broadcast (a load) against one load
// of the tokens' quads shared by the R rows.
template <size_t kQuads, int R>
HWY_INLINE void QuadDots(const uint8_t* codes, size_t row_stride, const int8_t* x, hn::Vec512<int32_t>* acc) {
  const hn::Full512<int32_t> d32;
  const hn::Full512<uint8_t> du8;
  const hn::Full512<int8_t> di8;
#pragma GCC unroll 8
  for (size_t q = 0; q < kQuads; ++q) {
    const auto xv = hn::LoadU(di8, x + 64 * q);
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, codes + size_t(r) * row_stride + 4 * q, 4);
      acc[r] = MulAddQuads(acc[r], hn::BitCast(du8, hn::Set(d32, quad)), xv);
    }
  }
}
#endif  // PAGODA_X86_VNNI512
