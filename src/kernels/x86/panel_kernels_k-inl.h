// The row-panel kernels of Q5_K, Q3_K, Q2_K and IQ4_XS (kernels/panels.h),
// in the idiom of panel_kernels-inl.h, which includes this file inside its
// per-width namespace (after V, the helpers and Legacy / Q4K / Q6K): so no
// include guard and no includes. Each gives one panel's block against K
// tokens (P = 1: their panels go one by one, see PanelDotStreams), with the
// scalar kernel's exact integer sums and float expression.

// Bit `bit` (0..7) of every byte of v moved to bit `to` (an immediate after
// unrolling), the rest cleared: 16-bit shifts, whose carries across the
// byte boundary never reach bit `to`.
PAGODA_PANEL_INLINE I bit_to(I v, int bit, int to) {
  const I moved = bit <= to ? V::slli16(v, to - bit) : V::srli16(v, bit - to);
  return V::and_(moved, V::set8(char(1 << to)));
}

// Q5_K: Q4_K's scales and mins (the same 12 bytes, unpacked as Q4K does) and
// per 64-element chunk c, 8 loads of rows x 8 nibbles with their fifth bits
// (bits 2c, 2c + 1 of the qh bytes of the same quad): sub-blocks 2c, 2c + 1.
// Layout: d[16] | dmin[16] | scales [3][row][4] | qh [quad 8][row][4] |
// qs [chunk 4][quad 8][row][4].
struct Q5K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ5_K);
  static constexpr int kMaxTokens = V::kVnni ? 4 : 2;
  static constexpr size_t kPrefetchBlocks = 2;
  static constexpr bool kStreamsTogether = false;

  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t /*acc_stride*/) {
    static_assert(P == 1, "Q5_K's panels go one at a time (PanelDotStreams)");
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const I low4 = V::set8(0x0F), low6 = V::set8(63), bits45 = V::set8(0x30), low16 = V::set32(0x00FF00FF);
    const uint8_t* lanes = blocks[0] + kHalfBytes * half;
    const I s0 = V::load(lanes + 64), s1 = V::load(lanes + 128), s2 = V::load(lanes + 192);
    const I sc_lo = V::and_(s0, low6), sc_hi = V::or_(V::and_(s2, low4), V::and_(V::srli16(s0, 2), bits45));
    const I m_lo = V::and_(s1, low6);
    const I m_hi = V::or_(V::and_(V::srli16(s2, 4), low4), V::and_(V::srli16(s1, 2), bits45));
    const I m_pairs[4] = {V::and_(m_lo, low16), V::srli16(m_lo, 8), V::and_(m_hi, low16), V::srli16(m_hi, 8)};
    const F wmin = block_scales(blocks[0] + 32, half);
    F mins[K];
    I scaled[K];
    for (int k = 0; k < K; ++k) {
      const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 4;
      I m = V::zero();
      for (int i = 0; i < 4; ++i) m = V::dot_i16(m, m_pairs[i], V::set32(terms[i]));
      mins[k] = V::opaque(V::mul(wmin, V::cvt(m)));
      scaled[k] = V::zero();
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      I lo[K], hi[K];
      for (int k = 0; k < K; ++k) lo[k] = hi[k] = V::zero();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const I v = V::load_reg(lanes + 768 + 64 * (8 * c + q)), h = V::load_reg(lanes + 256 + 64 * q);
        const I v_lo = V::or_(V::and_(v, low4), bit_to(h, 2 * c, 4));
        const I v_hi = V::or_(V::and_(V::srli16(v, 4), low4), bit_to(h, 2 * c + 1, 4));
        for (int k = 0; k < K; ++k) {
          lo[k] = V::dot_u8s8(lo[k], v_lo, V::bcast_quad(x[k]->qs + 64 * c + 4 * q));
          hi[k] = V::dot_u8s8(hi[k], v_hi, V::bcast_quad(x[k]->qs + 64 * c + 32 + 4 * q));
        }
      }
      const I sc_a = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2));
      const I sc_b = byte_u32(c < 2 ? sc_lo : sc_hi, 2 * (c % 2) + 1);
      for (int k = 0; k < K; ++k) {
        scaled[k] = V::add32(scaled[k], V::mullo32(lo[k], sc_a));
        scaled[k] = V::add32(scaled[k], V::mullo32(hi[k], sc_b));
      }
    }
    const F wd = block_scales(blocks[0], half);
    for (int k = 0; k < K; ++k) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q5_k_q8_k
      const F s = V::opaque(V::mul(wd, V::cvt(scaled[k])));
      const F xd = V::set1f(a.scales[size_t(first + k) * a.nb + b]);
      acc[k] = V::add(acc[k], V::opaque(V::mul(xd, V::opaque(V::sub(s, mins[k])))));
    }
  }
};

// Q3_K and Q2_K: per 128 elements n and quad q, one load of rows x 4 qs
// bytes holds 2-bit codes of 4 quads (elements 128 n + 32 s + 4 q.., s =
// 0..3), Q3_K's third bits in the hmask load of quad q (bit 4 n + s); quads
// 4 part .. 4 part + 3 of shift s make sub-block 8 n + 2 s + part. Q3_K: codes 0..7
// (value + 4), its sums less 4 x the activations' (a.terms) times the signed
// scale; Q2_K: codes 0..3 times the scale, mins against the activations'
// sub-block sums as 16-bit pairs (a.terms).
// Layouts: Q2_K scales [4][row][4] | qs [n 2][quad 8][row][4] | d[16] | dmin[16];
// Q3_K hmask [quad 8][row][4] | qs [n 2][quad 8][row][4] | scales [3][row][4] | d[16].
template <TensorType kType>
struct LowBitK {
  static constexpr bool kQ3 = kType == TensorType::Q3_K;
  static constexpr size_t kBlockBytes = kPanelRows * (kQ3 ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K));
  static constexpr size_t kQs = kQ3 ? 512 : 256, kScales = kQ3 ? 1536 : 0, kD = kQ3 ? 1728 : 1280;
  static constexpr int kMaxTokens = V::kVnni ? 8 : 4;
  static constexpr size_t kPrefetchBlocks = 2;
  static constexpr bool kStreamsTogether = false;

  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t /*acc_stride*/) {
    static_assert(P == 1, "Q2_K's and Q3_K's panels go one at a time (PanelDotStreams)");
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const I low4 = V::set8(0x0F), three = V::set8(3);
    const uint8_t* lanes = blocks[0] + kHalfBytes * half;
    // Scale (and Q2_K min) of sub-blocks 4g .. 4g + 3 in the bytes of sc[g].
    I sc[4];
    [[maybe_unused]] F mins[K];
    if constexpr (kQ3) {
      const I s[3] = {V::load(lanes + kScales), V::load(lanes + kScales + 64), V::load(lanes + kScales + 128)};
      for (int g = 0; g < 4; ++g) {  // see q3_k_scale: stored + 32
        const I low = V::and_(g < 2 ? s[g % 2] : V::srli16(s[g % 2], 4), low4);
        const I top = V::and_(g < 2 ? V::slli16(s[2], 4 - 2 * g) : V::srli16(s[2], 2 * g - 4), V::set8(0x30));
        sc[g] = V::or_(low, top);
      }
    } else {
      const I low16 = V::set32(0x00FF00FF);
      I m[K];
      for (int k = 0; k < K; ++k) m[k] = V::zero();
      for (int g = 0; g < 4; ++g) {
        const I v = V::load(lanes + 64 * g);
        sc[g] = V::and_(v, low4);
        const I mn = V::and_(V::srli16(v, 4), low4);
        const I pa = V::and_(mn, low16), pb = V::srli16(mn, 8);  // sub-blocks (4g, 4g + 2), (4g + 1, 4g + 3)
        for (int k = 0; k < K; ++k) {
          const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 8;
          m[k] = V::dot_i16(V::dot_i16(m[k], pa, V::set32(terms[2 * g])), pb, V::set32(terms[2 * g + 1]));
        }
      }
      const F wmin = block_scales(blocks[0] + kD + 32, half);
      for (int k = 0; k < K; ++k) mins[k] = V::opaque(V::mul(wmin, V::cvt(m[k])));
    }
    I scaled[K];
    for (int k = 0; k < K; ++k) scaled[k] = V::zero();
    // sum_j scale_j * (sub-block j's sum, Q3_K less its term), token k.
    auto add_scaled = [&](int j, const I* sums) PAGODA_PANEL_TARGET {
      I scale = byte_u32(sc[j / 4], j % 4);
      if constexpr (kQ3) scale = V::sub32(scale, V::set32(32));
      for (int k = 0; k < K; ++k) {
        I sum = sums[k];
        if constexpr (kQ3) sum = V::sub32(sum, V::set32(a.terms[(size_t(first + k) * a.nb + b) * 16 + size_t(j)]));
        scaled[k] = V::add32(scaled[k], V::mullo32(sum, scale));
      }
    };
    // The codes of shift sh from a load of quad q of half n.
    auto codes = [&](I v, int n, int q, int sh) PAGODA_PANEL_TARGET {
      I c = V::and_(sh == 0 ? v : V::srli16(v, 2 * sh), three);
      if constexpr (kQ3) c = V::or_(c, bit_to(V::load(lanes + 64 * q), 4 * n + sh, 2));
      return c;
    };
    if constexpr (K <= 2) {
      // Few tokens (decode): each load's 4 shifts at once, 4 sub-blocks' sums.
#pragma GCC unroll(V::kVnni ? 2 : 1)
      for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
        for (int part = 0; part < 2; ++part) {
          I s[4][K];
          for (auto& sub : s)
            for (auto& v : sub) v = V::zero();
#pragma GCC unroll 4
          for (int q = 4 * part; q < 4 * part + 4; ++q) {
            const I v = V::load_reg(lanes + kQs + 64 * (8 * n + q));
#pragma GCC unroll 4
            for (int sh = 0; sh < 4; ++sh) {
              const I c = codes(v, n, q, sh);
              for (int k = 0; k < K; ++k)
                s[sh][k] = V::dot_u8s8(s[sh][k], c, V::bcast_quad(x[k]->qs + 128 * n + 32 * sh + 4 * q));
            }
          }
#pragma GCC unroll 4
          for (int sh = 0; sh < 4; ++sh) add_scaled(8 * n + 2 * sh + part, s[sh]);
        }
    } else {
      // Many tokens: sub-block by sub-block, each of its 4 quads' codes taken
      // from its load (read again per sub-block, from L1), one accumulator
      // per token, so a block's codes serve 8 tokens in AVX-512's registers.
#pragma GCC unroll(V::kVnni ? 2 : 1)
      for (int n = 0; n < 2; ++n)
#pragma GCC unroll(V::kVnni ? 4 : 1)
        for (int sh = 0; sh < 4; ++sh)
#pragma GCC unroll(V::kVnni ? 2 : 1)
          for (int part = 0; part < 2; ++part) {
            I s[K];
            for (int k = 0; k < K; ++k) s[k] = V::zero();
#pragma GCC unroll 4
            for (int q = 4 * part; q < 4 * part + 4; ++q) {
              const I c = codes(V::load(lanes + kQs + 64 * (8 * n + q)), n, q, sh);
              for (int k = 0; k < K; ++k)
                s[k] = V::dot_u8s8(s[k], c, V::bcast_quad(x[k]->qs + 128 * n + 32 * sh + 4 * q));
            }
            add_scaled(8 * n + 2 * sh + part, s);
          }
    }
    const F wd = block_scales(blocks[0] + kD, half);
    for (int k = 0; k < K; ++k) {
      const F xd = V::set1f(a.scales[size_t(first + k) * a.nb + b]);
      if constexpr (kQ3) {  // x.d * d * scaled, as vec_dot_q3_k_q8_k
        acc[k] = V::add(acc[k], V::opaque(V::mul(V::mul(xd, wd), V::cvt(scaled[k]))));
      } else {  // x.d * (d * scaled - dmin * mins), as vec_dot_q2_k_q8_k
        const F s = V::opaque(V::mul(wd, V::cvt(scaled[k])));
        acc[k] = V::add(acc[k], V::opaque(V::mul(xd, V::opaque(V::sub(s, mins[k])))));
      }
    }
  }
};

// IQ4_XS: per sub-block of 32, 4 loads of rows x 8 nibbles, each looked up
// as its table value + 128 (Q8_0's stored codes, multiplied as Legacy does
// them: the term 128 x the activations' sum comes off where V::kQ8_0Offset),
// the sum times the row's scale less 32 (scales_l's nibble, scales_h's two
// bits). Layout: d[16] | scales_h[16] | scales_l [row][4] | qs [sub 8][quad 4][row][4].
struct IQ4XS {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockIQ4_XS);
  static constexpr int kMaxTokens = V::kVnni ? 8 : 4;
  static constexpr size_t kPrefetchBlocks = 2;
  static constexpr bool kStreamsTogether = false;

  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t /*acc_stride*/) {
    static_assert(P == 1, "IQ4_XS's panels go one at a time (PanelDotStreams)");
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const I low4 = V::set8(0x0F), table = V::bcast16(kIQ4NLStored);
    const uint8_t* lanes = blocks[0] + kHalfBytes * half;
    const I high = V::load_u16(blocks[0] + 32 + 2 * V::kLanes * half), low = V::load(lanes + 64);
    I scaled[K];
    for (int k = 0; k < K; ++k) scaled[k] = V::zero();
#pragma GCC unroll(V::kVnni ? 8 : 1)
    for (int j = 0; j < 8; ++j) {
      constexpr int kChains = K <= 2 ? 2 : 1;  // few tokens: the low and high nibbles in two chains
      I s[kChains][K];
      for (auto& chain : s)
        for (auto& v : chain) v = V::zero();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const I v = V::load_reg(lanes + 128 + 64 * (4 * j + q));
        const I lo = V::shuffle8(table, V::and_(v, low4)), hi = V::shuffle8(table, V::and_(V::srli16(v, 4), low4));
        for (int k = 0; k < K; ++k) {
          s[0][k] = V::dot_q8_0(s[0][k], lo, V::bcast_quad(x[k]->qs + 32 * j + 4 * q));
          s[kChains - 1][k] = V::dot_q8_0(s[kChains - 1][k], hi, V::bcast_quad(x[k]->qs + 32 * j + 16 + 4 * q));
        }
      }
      const I ls = V::or_(V::and_(V::srli32(byte_u32(low, j / 2), 4 * (j % 2)), V::set32(0xF)),
                          V::slli32(V::and_(V::srli32(high, 2 * j), V::set32(3)), 4));
      const I scale = V::sub32(ls, V::set32(32));
      for (int k = 0; k < K; ++k) {
        I sum = s[0][k];
        if constexpr (kChains == 2) sum = V::add32(sum, s[1][k]);
        if constexpr (V::kQ8_0Offset) sum = V::sub32(sum, V::set32(a.terms[(size_t(first + k) * a.nb + b) * 8 + j]));
        scaled[k] = V::add32(scaled[k], V::mullo32(sum, scale));
      }
    }
    const F wd = block_scales(blocks[0], half);
    for (int k = 0; k < K; ++k) {  // x.d * d * scaled, as vec_dot_iq4_xs_q8_k
      const F xd = V::set1f(a.scales[size_t(first + k) * a.nb + b]);
      acc[k] = V::add(acc[k], V::opaque(V::mul(V::mul(xd, wd), V::cvt(scaled[k]))));
    }
  }
};
