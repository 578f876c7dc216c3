// The row-panel kernels (kernels/panels.h), written once for every x86 vector
// width. Not a normal header: panel_dot_avx512.cpp and panel_dot_avx2.cpp
// each include it inside their own namespace, after defining
//   PAGODA_PANEL_TARGET  the function attribute that enables the target, and
//   V                    its vector operations (see either file),
// so each gets its own copy compiled for its target (as Highway's -inl.h
// files are). A 64-byte group of a panel holds 4 bytes of each of 16 rows; a
// target with 8 32-bit lanes takes it as two halves, rows 0-7 and 8-15.
// Where the widths' instructions differ (vpdpbusd's 32-bit sums against
// vpmaddubsw's int16 pairs) V::kVnni picks the variant. Every kernel keeps
// the scalar kernel's integer sums and float expression: the same bits.
//
// No include guard, by design; the includer provides the headers
// (<immintrin.h>, <cstring>, <utility>, quant/blocks.h, kernels/panels.h) and
// makes a PanelKernels of has_kernels, dot and streams (at the end).

#define PAGODA_PANEL_INLINE PAGODA_PANEL_TARGET __attribute__((always_inline)) inline

using I = V::I;
using F = V::F;
constexpr int kHalves = kPanelRows / V::kLanes;
constexpr size_t kHalfBytes = 4 * V::kLanes;  // a half's offset in each 64-byte group

// Token k's activation row, as blocks of type XBlock.
template <class XBlock>
PAGODA_PANEL_INLINE const XBlock* token_row(const PanelActivations& a, int k) {
  return reinterpret_cast<const XBlock*>(a.rows + size_t(k) * a.row_stride);
}

// The F16 scales of one block's rows in this half, as floats (2 bytes a row).
PAGODA_PANEL_INLINE F block_scales(const uint8_t* p, int half) { return V::load_scales(p + 2 * V::kLanes * half); }

// The E8M0 bytes of one block's rows in this half (1 byte a row) as
// mxfp4_scale's floats, 2^(e - 128), subnormal for e < 2 (V::pow2: exact).
PAGODA_PANEL_INLINE F e8m0_scales(const uint8_t* p, int half) {
  return V::pow2(V::sub32(V::load_u8(p + V::kLanes * half), V::set32(128)));
}

// Bits e0 .. e0 + 3 of every 32-bit lane of h, as bit 4 of its 4 bytes (the
// fifth bits of Q5_0 elements e0 ..): a multiply spreads 4 bits 7 apart.
PAGODA_PANEL_INLINE I fifth_bits(I h, int e0) {
  const I four = V::and_(V::srli32(h, e0), V::set32(0xF));
  return V::and_(V::mullo32(four, V::set32(0x02040810)), V::set32(0x10101010));
}

// Byte j (0..3) of every 32-bit lane, zero- or sign-extended.
PAGODA_PANEL_INLINE I byte_u32(I v, int j) { return V::and_(V::srli32(v, 8 * j), V::set32(0xFF)); }
PAGODA_PANEL_INLINE I byte_i32(I v, int j) { return V::srai32(V::slli32(v, 24 - 8 * j), 24); }

// Every kernel asks for the block Format::kPrefetchBlocks on (into L1) while
// working on one: the hardware prefetchers alone keep too few reads in
// flight (each format's distance was measured best; figures in
// docs/performance.md, appendix "Kernel tuning").
template <class Format>
PAGODA_PANEL_INLINE void prefetch_ahead(const uint8_t* block) {
  const uint8_t* ahead = block + Format::kPrefetchBlocks * Format::kBlockBytes;
  for (size_t line = 0; line < Format::kBlockBytes; line += 64) __builtin_prefetch(ahead + line, 0, 3);
}

// Q8_0, Q4_0 and Q5_0: half `half` of block b of P panels against K tokens,
// added to acc[p * acc_stride + k]. Q8_0 (8 loads of rows x 4 codes), Q4_0
// and Q5_0 (4 loads of rows x 8 nibbles, low and high giving quads q and
// q + 4; Q5_0 ors in the fifth bits). Each quad of codes times every token's
// matching 4 activation codes (a broadcast, shared by the P panels); the
// codes are unsigned, so the activations' term (the code offset's share of
// the sum) goes after. Q8_0's codes are stored + 128 for vpdpbusd;
// V::dot_q8_0 either keeps that offset (V::kQ8_0Offset, the term removes it)
// or multiplies signed codes. IQ4_NL is Q4_0's layout with each nibble
// looked up (a byte shuffle) as its table value + 128, then multiplied as
// Q8_0's stored codes; MXFP4 the same with its table, after one E8M0 byte a
// row instead of the F16 scales (e8m0_scales). Q5_1 is Q5_0's layout after
// two F16 fields (d, m), its codes unsigned with no offset; its float term
// adds m x the sum of the activations (a.terms).
// IQ4_NL's and IQ4_XS's table values + 128: Q8_0's stored codes.
alignas(16) inline constexpr uint8_t kIQ4NLStored[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                         129, 141, 153, 166, 181, 197, 217, 241};
static_assert(kIQ4NLStored[0] == kIQ4NLValues[0] + 128 && kIQ4NLStored[15] == kIQ4NLValues[15] + 128);
// MXFP4's table values + 128.
alignas(16) inline constexpr uint8_t kMXFP4Stored[16] = {128, 129, 130, 131, 132, 134, 136, 140,
                                                         128, 127, 126, 125, 124, 122, 120, 116};
static_assert(kMXFP4Stored[7] == kMXFP4Values[7] + 128 && kMXFP4Stored[15] == kMXFP4Values[15] + 128);

template <TensorType kType>
struct Legacy {
  static constexpr size_t kBlockBytes = kPanelRows * (kType == TensorType::Q8_0    ? sizeof(BlockQ8_0)
                                                      : kType == TensorType::Q5_0  ? sizeof(BlockQ5_0)
                                                      : kType == TensorType::Q5_1  ? sizeof(BlockQ5_1)
                                                      : kType == TensorType::MXFP4 ? sizeof(BlockMXFP4)
                                                                                   : sizeof(BlockQ4_0));
  // As many as the accumulators leave registers for (32 on AVX-512, 16 on AVX2).
  static constexpr int kMaxTokens = V::kVnni ? 8 : 4;
  static constexpr size_t kPrefetchBlocks = 16;   // see prefetch_ahead
  static constexpr bool kStreamsTogether = true;  // see PanelDotStreams

  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t acc_stride) {
    constexpr bool kQ51 = kType == TensorType::Q5_1, kMX = kType == TensorType::MXFP4;
    constexpr bool kNL = kType == TensorType::IQ4_NL || kMX;  // table lookups
    constexpr bool kQ8 = kType == TensorType::Q8_0, kQ5 = kType == TensorType::Q5_0 || kQ51;
    constexpr bool kStored = kQ8 || kNL;  // codes as Q8_0 stores them (value + 128)
    constexpr bool kTerm = kQ51 ? false : !kStored || V::kQ8_0Offset;
    constexpr size_t kFifth = kQ51 ? 64 : 32;                         // Q5_0's and Q5_1's fifth bits
    constexpr size_t kCodes = kQ51 ? 128 : kQ5 ? 96 : kMX ? 16 : 32;  // after the scales (and the fifth bits)
    // With one or two tokens on AVX-512 a block's multiply-adds run as two
    // dependency chains per panel.
    constexpr int kChains = V::kVnni && K <= 2 ? 2 : 1;
    const BlockQ8_0* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_0>(a, first + k) + b;
    I s[kChains][P][K];
    for (auto& chain : s)
      for (auto& panel : chain)
        for (auto& v : panel) v = V::zero();
    auto multiply = [&](int q, const I* codes) PAGODA_PANEL_TARGET {
      for (int k = 0; k < K; ++k) {
        const I xq = V::bcast_quad(x[k]->qs + 4 * q);
        for (int p = 0; p < P; ++p) {
          I& sum = s[q % kChains][p][k];
          sum = kStored ? V::dot_q8_0(sum, codes[p], xq) : V::dot_u8s8(sum, codes[p], xq);
        }
      }
    };
    const uint8_t* lanes[P];
    for (int p = 0; p < P; ++p) lanes[p] = blocks[p] + kHalfBytes * half;
    if constexpr (kQ8) {
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        I codes[P];
        for (int p = 0; p < P; ++p) codes[p] = V::load(lanes[p] + kCodes + 64 * q);
        multiply(q, codes);
      }
    } else {
      const I low4 = V::set8(0x0F);
      I h[P];
      for (int p = 0; p < P; ++p) h[p] = kQ5 ? V::load(lanes[p] + kFifth) : V::zero();
      [[maybe_unused]] const I table = kNL ? V::bcast16(kMX ? kMXFP4Stored : kIQ4NLStored) : V::zero();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        I lo[P], hi[P];
        for (int p = 0; p < P; ++p) {
          const I v = V::load_reg(lanes[p] + kCodes + 64 * q);
          lo[p] = V::and_(v, low4);
          hi[p] = V::and_(V::srli16(v, 4), low4);
          if constexpr (kQ5) {
            lo[p] = V::or_(lo[p], fifth_bits(h[p], 4 * q));
            hi[p] = V::or_(hi[p], fifth_bits(h[p], 16 + 4 * q));
          }
          if constexpr (kNL) {
            lo[p] = V::shuffle8(table, lo[p]);
            hi[p] = V::shuffle8(table, hi[p]);
          }
        }
        multiply(q, lo);
        multiply(q + 4, hi);
      }
    }
    // d_w * d_x * (sum - term), as vec_dot_q8_0_q8_0 and its kin; Q5_1
    // d_x * (d_w * sum + m_w * term), as vec_dot_q5_1_q8_0.
    for (int p = 0; p < P; ++p) {
      const F wd = kMX ? e8m0_scales(blocks[p], half) : block_scales(blocks[p], half);
      [[maybe_unused]] const F wm = kQ51 ? block_scales(blocks[p] + 32, half) : V::zerof();
      for (int k = 0; k < K; ++k) {
        const size_t i = size_t(first + k) * a.nb + b;
        I sum = s[0][p][k];
        if constexpr (kChains == 2) sum = V::add32(sum, s[1][p][k]);
        if constexpr (kTerm) sum = V::sub32(sum, V::set32(a.terms[i]));
        F prod;
        if constexpr (kQ51) {
          const F min = V::opaque(V::mul(wm, V::set1f(float(a.terms[i]))));
          prod = V::mul(V::set1f(a.scales[i]), V::opaque(V::add(V::opaque(V::mul(wd, V::cvt(sum))), min)));
        } else {
          prod = V::mul(V::mul(wd, V::set1f(a.scales[i])), V::cvt(sum));
        }
        F& out = acc[size_t(p) * acc_stride + size_t(k)];
        out = V::add(out, V::opaque(prod));
      }
    }
  }
};

// Q4_K: super-block b of P panels against K tokens: the rows' 6-bit scales
// and mins unpacked in their lanes (sub-block j's in byte j % 4 of a lane),
// the mins against the activations' sub-block sums by 16-bit multiply-adds,
// then per 64-element chunk 8 loads of rows x 8 nibbles, the low nibbles
// (sub-block 2c) and the high ones (2c + 1) each times the tokens' quads
// (broadcasts shared by the panels), and each sub-block's sum times its
// scale. vpdpbusd takes the high nibbles in place (16 x the code; the
// 32-bit sum is divided by 16 after, exactly); vpmaddubsw's int16 pairs
// could overflow on that, so without VNNI they are shifted down first.
struct Q4K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ4_K);
  static constexpr int kMaxTokens = V::kVnni ? 4 : 2;  // the accumulators fill the registers
  static constexpr size_t kPrefetchBlocks = 2;
  static constexpr bool kStreamsTogether = true;  // see PanelDotStreams

  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t acc_stride) {
    constexpr int kChains = V::kVnni && K * P == 1 ? 2 : 1;
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const I low4 = V::set8(0x0F), high4 = V::set8(char(0xF0)), low6 = V::set8(63), bits45 = V::set8(0x30);
    const I low16 = V::set32(0x00FF00FF);
    const uint8_t* lanes[P];
    I sc_lo[P], sc_hi[P], scaled[P][K];
    F mins[P][K];
    for (int p = 0; p < P; ++p) {
      lanes[p] = blocks[p] + kHalfBytes * half;
      const I s0 = V::load(lanes[p] + 64), s1 = V::load(lanes[p] + 128), s2 = V::load(lanes[p] + 192);
      // unpack_q4_k_scale, every row at once: scales and mins of sub-blocks 0-3, then 4-7.
      sc_lo[p] = V::and_(s0, low6);
      sc_hi[p] = V::or_(V::and_(s2, low4), V::and_(V::srli16(s0, 2), bits45));
      const I m_lo = V::and_(s1, low6);
      const I m_hi = V::or_(V::and_(V::srli16(s2, 4), low4), V::and_(V::srli16(s1, 2), bits45));
      // Mins as 16-bit pairs (0, 2), (1, 3), (4, 6), (5, 7), as the terms' pairs.
      const I m_pairs[4] = {V::and_(m_lo, low16), V::srli16(m_lo, 8), V::and_(m_hi, low16), V::srli16(m_hi, 8)};
      const F wmin = block_scales(blocks[p] + 32, half);
      for (int k = 0; k < K; ++k) {
        const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 4;
        I m = V::zero();
        for (int i = 0; i < 4; ++i) m = V::dot_i16(m, m_pairs[i], V::set32(terms[i]));
        mins[p][k] = V::opaque(V::mul(wmin, V::cvt(m)));
        scaled[p][k] = V::zero();
      }
    }
    // Unrolled on AVX-512 (its 32 registers hold the four chunks' values);
    // AVX2 keeps the loop.
#pragma GCC unroll(V::kVnni ? 4 : 1)
    for (int c = 0; c < 4; ++c) {
      I lo[kChains][P][K], hi[kChains][P][K];
      for (int h = 0; h < kChains; ++h)
        for (int p = 0; p < P; ++p)
          for (int k = 0; k < K; ++k) lo[h][p][k] = hi[h][p][k] = V::zero();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        I v_lo[P], v_hi[P];
        for (int p = 0; p < P; ++p) {
          const I v = V::load_reg(lanes[p] + 256 + 64 * (8 * c + q));
          v_lo[p] = V::and_(v, low4);
          v_hi[p] = V::kVnni ? V::and_(v, high4) : V::and_(V::srli16(v, 4), low4);
        }
        for (int k = 0; k < K; ++k) {
          const I xa = V::bcast_quad(x[k]->qs + 64 * c + 4 * q), xb = V::bcast_quad(x[k]->qs + 64 * c + 32 + 4 * q);
          for (int p = 0; p < P; ++p) {
            lo[q % kChains][p][k] = V::dot_u8s8(lo[q % kChains][p][k], v_lo[p], xa);
            hi[q % kChains][p][k] = V::dot_u8s8(hi[q % kChains][p][k], v_hi[p], xb);
          }
        }
      }
      for (int p = 0; p < P; ++p) {
        const I sc_a = byte_u32(c < 2 ? sc_lo[p] : sc_hi[p], 2 * (c % 2));
        const I sc_b = byte_u32(c < 2 ? sc_lo[p] : sc_hi[p], 2 * (c % 2) + 1);
        for (int k = 0; k < K; ++k) {
          I l = lo[0][p][k], h = hi[0][p][k];
          if constexpr (kChains == 2) {
            l = V::add32(l, lo[1][p][k]);
            h = V::add32(h, hi[1][p][k]);
          }
          if constexpr (V::kVnni) h = V::srai32(h, 4);
          scaled[p][k] = V::add32(scaled[p][k], V::mullo32(l, sc_a));
          scaled[p][k] = V::add32(scaled[p][k], V::mullo32(h, sc_b));
        }
      }
    }
    for (int p = 0; p < P; ++p) {
      const F wd = block_scales(blocks[p], half);
      for (int k = 0; k < K; ++k) {  // x.d * (d * scaled - dmin * mins), as vec_dot_q4_k_q8_k
        const F s = V::opaque(V::mul(wd, V::cvt(scaled[p][k])));
        const F xd = V::set1f(a.scales[size_t(first + k) * a.nb + b]);
        F& out = acc[size_t(p) * acc_stride + size_t(k)];
        out = V::add(out, V::opaque(V::mul(xd, V::opaque(V::sub(s, mins[p][k])))));
      }
    }
  }
};

// Q6_K: super-block b of a panel against K tokens. Per 128 elements (half
// h) and kk = 0, 1: 8 loads of low nibbles (elements 32kk + 4q.. in the low
// ones, 32 (kk + 2) + 4q.. in the high) and their top bits, giving rows x 4
// six-bit codes for two 32-element groups (up to 63: vpmaddubsw's pairs stay
// within int16); sub-block sums (16 elements, 4 quads) less 32 x the
// activations' sum, times the signed sub-block scale.
struct Q6K {
  static constexpr size_t kBlockBytes = kPanelRows * sizeof(BlockQ6_K);
  static constexpr int kMaxTokens = V::kVnni ? 4 : 2;
  static constexpr size_t kPrefetchBlocks = 2;
  static constexpr bool kStreamsTogether = false;  // see PanelDotStreams

  // One panel (P = 1): blocks[0]; acc[k].
  template <int K, int P>
  PAGODA_PANEL_INLINE static void block(const uint8_t* const* blocks, int half, const PanelActivations& a, int first,
                                        size_t b, F* acc, size_t /*acc_stride*/) {
    static_assert(P == 1, "Q6_K's panels go one at a time (PanelDotStreams)");
    const uint8_t* block = blocks[0];
    const BlockQ8_K* x[K];
    for (int k = 0; k < K; ++k) x[k] = token_row<BlockQ8_K>(a, first + k) + b;
    const I low4 = V::set8(0x0F), bits45 = V::set8(0x30);
    const uint8_t* lanes = block + kHalfBytes * half;
    I sc_words[4];
    for (int i = 0; i < 4; ++i) sc_words[i] = V::load(lanes + 3072 + 64 * i);
    I scaled[K];
    for (int k = 0; k < K; ++k) scaled[k] = V::zero();
      // Unrolled on AVX-512, so every offset, scale byte and term index is a
      // constant (rolled, GCC spilled them: 1.5x slower, docs/performance.md
      // appendix "Kernel tuning"). AVX2's 16 registers keep the loops.
#pragma GCC unroll(V::kVnni ? 2 : 1)
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll(V::kVnni ? 2 : 1)
      for (int kk = 0; kk < 2; ++kk)
#pragma GCC unroll(V::kVnni ? 2 : 1)
        for (int part = 0; part < 2; ++part) {  // quads 4 part .. 4 part + 3: sub-blocks 8h + 2k + part
          I sa[K], sb[K];                       // groups k = kk and kk + 2
          for (int k = 0; k < K; ++k) sa[k] = sb[k] = V::zero();
#pragma GCC unroll 4
          for (int q = 4 * part; q < 4 * part + 4; ++q) {
            const I v = V::load_reg(lanes + 64 * ((2 * h + kk) * 8 + q));
            const I u = V::load_reg(lanes + 2048 + 64 * (8 * h + q));
            // Top bits of group g (0..3) sit at bits 2g, 2g + 1 of u: moved to bits 4, 5.
            const I top_a = V::and_(V::slli16(u, 4 - 2 * kk), bits45);
            const I top_b = V::and_(kk == 0 ? u : V::srli16(u, 2), bits45);
            const I ca = V::or_(V::and_(v, low4), top_a);
            const I cb = V::or_(V::and_(V::srli16(v, 4), low4), top_b);
            for (int k = 0; k < K; ++k) {
              sa[k] = V::dot_u8s8(sa[k], ca, V::bcast_quad(x[k]->qs + 128 * h + 32 * kk + 4 * q));
              sb[k] = V::dot_u8s8(sb[k], cb, V::bcast_quad(x[k]->qs + 128 * h + 32 * (kk + 2) + 4 * q));
            }
          }
          const int ja = 8 * h + 2 * kk + part, jb = ja + 4;
          const I sc_a = byte_i32(sc_words[ja / 4], ja % 4), sc_b = byte_i32(sc_words[jb / 4], jb % 4);
          for (int k = 0; k < K; ++k) {
            const int32_t* terms = a.terms.data() + (size_t(first + k) * a.nb + b) * 16;
            const I da = V::sub32(sa[k], V::set32(terms[ja]));
            const I db = V::sub32(sb[k], V::set32(terms[jb]));
            scaled[k] = V::add32(scaled[k], V::mullo32(da, sc_a));
            scaled[k] = V::add32(scaled[k], V::mullo32(db, sc_b));
          }
        }
    const F wd = block_scales(block + 3328, half);
    for (int k = 0; k < K; ++k) {  // x.d * d * scaled, as vec_dot_q6_k_q8_k
      const F xd = V::set1f(a.scales[size_t(first + k) * a.nb + b]);
      acc[k] = V::add(acc[k], V::opaque(V::mul(V::mul(xd, wd), V::cvt(scaled[k]))));
    }
  }
};

#include "kernels/x86/panel_kernels_k-inl.h"

// K tokens against one panel, block by block (each block's halves in turn).
template <class Format, int K>
PAGODA_PANEL_TARGET void PanelDot(const uint8_t* panel, const PanelActivations& a, int first, float* out,
                                  size_t out_stride) {
  F acc[kHalves][K];
  for (auto& h : acc)
    for (auto& v : h) v = V::zerof();
  for (size_t b = 0; b < a.nb; ++b) {
    const uint8_t* block = panel + b * Format::kBlockBytes;
    prefetch_ahead<Format>(block);
    for (int half = 0; half < kHalves; ++half) Format::template block<K, 1>(&block, half, a, first, b, acc[half], 0);
  }
  for (int k = 0; k < K; ++k)
    for (int half = 0; half < kHalves; ++half) V::store(out + size_t(k) * out_stride + V::kLanes * half, acc[half][k]);
}

// One token against N panels, a block of each in turn: N read streams. With
// Format::kStreamsTogether the N panels' blocks go through one block() call,
// each activation quad broadcast once for all of them (faster for Q4_K,
// equal for Q8_0 and Q4_0). Q6_K's panels go one by one: together, GCC
// spills its sums. Figures: docs/performance.md, appendix "Kernel tuning".
template <class Format, int N>
PAGODA_PANEL_TARGET void PanelDotStreams(const uint8_t* const* panels, const PanelActivations& a, int token,
                                         float* const* outs) {
  F acc[kHalves][N];
  for (auto& h : acc)
    for (auto& v : h) v = V::zerof();
#pragma GCC unroll 1
  for (size_t b = 0; b < a.nb; ++b) {
    const uint8_t* blocks[N];
    for (int p = 0; p < N; ++p) {
      blocks[p] = panels[p] + b * Format::kBlockBytes;
      prefetch_ahead<Format>(blocks[p]);
      if constexpr (!Format::kStreamsTogether)
        for (int half = 0; half < kHalves; ++half)
          Format::template block<1, 1>(&blocks[p], half, a, token, b, &acc[half][p], 0);
    }
    if constexpr (Format::kStreamsTogether)
      for (int half = 0; half < kHalves; ++half) Format::template block<1, N>(blocks, half, a, token, b, acc[half], 1);
  }
  for (int p = 0; p < N; ++p)
    for (int half = 0; half < kHalves; ++half) V::store(outs[p] + V::kLanes * half, acc[half][p]);
}

using PanelFn = void (*)(const uint8_t*, const PanelActivations&, int, float*, size_t);
using PanelStreamsFn = void (*)(const uint8_t* const*, const PanelActivations&, int, float* const*);

// A format's kernels: one per token count up to its widest, one per number
// of panels side by side.
struct Kernels {
  PanelFn by_tokens[kPanelTokensMax] = {};
  int max_tokens = 0;
  PanelStreamsFn by_streams[kPanelStreamsMax] = {};
};

template <class Format, size_t... T, size_t... S>
constexpr Kernels kernels_of(std::index_sequence<T...>, std::index_sequence<S...>) {
  return Kernels{{PanelDot<Format, int(T) + 1>...}, int(sizeof...(T)), {PanelDotStreams<Format, int(S) + 1>...}};
}
template <class Format>
constexpr Kernels kKernels = kernels_of<Format>(std::make_index_sequence<Format::kMaxTokens>(),
                                                std::make_index_sequence<kPanelStreamsMax>());

inline const Kernels* kernels(TensorType t) {
  switch (t) {
    case TensorType::Q8_0: return &kKernels<Legacy<TensorType::Q8_0>>;
    case TensorType::Q4_0: return &kKernels<Legacy<TensorType::Q4_0>>;
    case TensorType::Q5_0: return &kKernels<Legacy<TensorType::Q5_0>>;
    case TensorType::Q5_1: return &kKernels<Legacy<TensorType::Q5_1>>;
    case TensorType::IQ4_NL: return &kKernels<Legacy<TensorType::IQ4_NL>>;
    case TensorType::MXFP4: return &kKernels<Legacy<TensorType::MXFP4>>;
    case TensorType::Q4_K: return &kKernels<Q4K>;
    case TensorType::Q6_K: return &kKernels<Q6K>;
    case TensorType::Q5_K: return &kKernels<Q5K>;
    case TensorType::Q3_K: return &kKernels<LowBitK<TensorType::Q3_K>>;
    case TensorType::Q2_K: return &kKernels<LowBitK<TensorType::Q2_K>>;
    case TensorType::IQ4_XS: return &kKernels<IQ4XS>;
    default: return nullptr;
  }
}

inline bool has_kernels(TensorType t) { return kernels(t) != nullptr; }

inline void dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
                size_t out_stride) {
  const Kernels* ks = kernels(t);
  for (int k = 0; k < n_tokens; k += ks->max_tokens) {
    const int n = std::min(ks->max_tokens, n_tokens - k);
    ks->by_tokens[n - 1](panel, a, first + k, out + size_t(k) * out_stride, out_stride);
  }
}

inline void streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
                    float* const* outs) {
  kernels(t)->by_streams[n - 1](panels, a, token, outs);
}

#undef PAGODA_PANEL_INLINE
