// What every quantized dot kernel TU shares per target (kernels/quant_dot.cpp,
// kernels/quant_dot_decoded.cpp): the compiler barrier that keeps products
// and sums two roundings, F16 scale loads, the prefetch, and the float half
// (AddTerms) that applies the block scales in the scalar kernels' order.
//
// Not a normal header: each includer includes it inside its per-target
// namespace (pagoda::HWY_NAMESPACE, every foreach_target pass, every target
// including HWY_SCALAR), after `using dot_tables::ChunkSums`; so it has no
// include guard and no includes.

// v, hidden from the optimizer: an empty asm that might have changed it.
template <class V>
HWY_INLINE V Opaque(V v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128
  asm("" : "+x"(v.raw));
#else
  asm volatile("" : : "r"(&v) : "memory");
#endif
  return v;
}

// A software prefetch into L2 (prefetcht1): for decode's streams of weight
// rows, measured ~5% faster than into L1 (docs/performance.md appendix).
HWY_INLINE void PrefetchL2(const void* p) { __builtin_prefetch(p, 0, 2); }

// An F16 scale as a float (one vcvtph2ps where the CPU has F16C).
HWY_INLINE float HalfToFloat(const uint8_t* p) {
  const hn::CappedTag<float, 1> df;
  const hn::Rebind<uint16_t, decltype(df)> du;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return hn::GetLane(hn::PromoteTo(df, hn::BitCast(dh, hn::Set(du, bits))));
}

// out[i] = the F16 scale at base + i * stride (bytes), as a float, i < n.
HWY_INLINE void HalfScales(const uint8_t* base, size_t stride, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(base + i * stride);
}

// ------------------------------------------------------------ float side
//
// acc[k] += each block's float term in block order, with the scalar kernels'
// exact expressions (see dot.cpp): the activation rows are vector lanes, each
// lane one independent running sum. xd[kXdStride b + k] is row k's scale of
// block b.
// The compiler may not fuse a multiply with the add or subtract after it (GCC
// contracts by default in C++, and these targets have FMA, the baseline the
// scalar kernels are compiled for does not), hence Opaque; the tests compare
// with the scalar kernels bit for bit on every target.

enum class Terms { kLegacy, kQ4K, kQ6K };

template <Terms kTerms, int K>
void AddTerms(const ChunkSums& c, size_t nb, const float* xd, float* acc) {
  const hn::CappedTag<float, dot_tables::sum_slots(K)> df;  // xd is zero in lanes past K
  const hn::RebindToSigned<decltype(df)> di;
  constexpr size_t kSlots = dot_tables::sum_slots(kTerms == Terms::kQ4K ? 2 * K : K);
  for (size_t k0 = 0; k0 < size_t(K); k0 += hn::Lanes(df)) {
    auto a = hn::LoadU(df, acc + k0);
    for (size_t b = 0; b < nb; ++b) {
      const auto x = hn::LoadU(df, xd + dot_tables::kXdStride * b + k0);
      const auto s = hn::ConvertTo(df, hn::LoadU(di, c.sums + b * kSlots + k0));
      const auto wd = hn::Set(df, c.w_d[b]);
      if constexpr (kTerms == Terms::kLegacy) {  // d_w * d_x * s
        a = hn::Add(a, Opaque(hn::Mul(hn::Mul(wd, x), s)));
      } else if constexpr (kTerms == Terms::kQ6K) {  // d_x * d_w * s
        a = hn::Add(a, Opaque(hn::Mul(hn::Mul(x, wd), s)));
      } else {  // d_x * (d_w * scaled - dmin_w * mins)
        const auto m = hn::ConvertTo(df, hn::LoadU(di, c.sums + b * kSlots + K + k0));
        const auto diff = hn::Sub(Opaque(hn::Mul(wd, s)), Opaque(hn::Mul(hn::Set(df, c.w_dmin[b]), m)));
        a = hn::Add(a, Opaque(hn::Mul(x, diff)));
      }
    }
    hn::StoreU(a, df, acc + k0);
  }
}

// One weight row against n_x activation rows over nb blocks (at most
// kChunkBlocks): acc[k] += the row pair's block terms. n_x (1-4 or 8) is
// dispatched to a template parameter so the per-row accumulators live in
// registers.
#define PAGODA_DOT_ENTRY(Name, Kernel, Block, kTerms, kMaxK)                                                     \
  void Name(const void* w, const uint8_t* x, size_t x_stride, int n_x, size_t nb, const float* xd, float* acc) { \
    ChunkSums c;                                                                                                 \
    switch (n_x) {                                                                                               \
      case 1: Kernel<1>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 1>(c, nb, xd, acc);                                                            \
      case 2: Kernel<2>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 2>(c, nb, xd, acc);                                                            \
      case 3: Kernel<3>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 3>(c, nb, xd, acc);                                                            \
      case 4: Kernel<4>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                      \
          return AddTerms<kTerms, 4>(c, nb, xd, acc);                                                            \
      default:                                                                                                   \
        if constexpr (kMaxK == 8) {                                                                              \
          Kernel<8>(static_cast<const Block*>(w), x, x_stride, nb, &c);                                          \
          return AddTerms<kTerms, 8>(c, nb, xd, acc);                                                            \
        }                                                                                                        \
    }                                                                                                            \
  }
