// Row panels (kernels/panels.h): the layouts, packing and unpacking, the
// activations' per-block terms, and the scalar reference kernel. The SIMD
// kernels are in panel_kernels-inl.h (compiled per x86 width), the run-time
// choice in panel_dot.cpp.
//
// A layout is a map from (row, byte of the row's block) to a byte of the
// panel's block, so one pair of loops packs and unpacks every format.
// Within a panel block, "[a][b][row][4]" means the 4-byte groups of the 16
// rows for each (a, b) lie side by side: one 64-byte load per (a, b).
#include "kernels/panels.h"

#include <cstring>

#include "kernels/quant_dot.h"
#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

constexpr size_t kRows = kPanelRows;

// Byte `j` of 4-byte group `group` of row r in a "[group][row][4]" region at `base`.
constexpr size_t lanes(size_t base, size_t group, int r, size_t j) {
  return base + (group * kRows + size_t(r)) * 4 + j;
}

// Q8_0 (34 bytes a row): d[16] | codes [quad 8][row][4], stored + 128.
size_t q8_0_offset(int r, size_t i) {
  if (i < 2) return 2 * size_t(r) + i;
  const size_t k = i - 2;
  return lanes(32, k / 4, r, k % 4);
}

// Q4_0 (18): d[16] | qs [quad 4][row][4]: qs byte 4q + j holds elements 4q + j
// (low nibble) and 16 + 4q + j (high).
size_t q4_0_offset(int r, size_t i) {
  if (i < 2) return 2 * size_t(r) + i;
  return lanes(32, (i - 2) / 4, r, (i - 2) % 4);
}

// Q5_0 (22): d[16] | qh [row][4] (the fifth bits, one 32-bit lane a row) | qs as Q4_0's.
size_t q5_0_offset(int r, size_t i) {
  if (i < 2) return 2 * size_t(r) + i;
  if (i < 6) return lanes(32, 0, r, i - 2);
  return lanes(96, (i - 6) / 4, r, (i - 6) % 4);
}

// Q4_K (144): d[16] | dmin[16] | scales [dword 3][row][4] | qs [chunk 4][quad 8][row][4].
// qs byte 32c + 4q + j holds elements 64c + 4q + j (low nibble, sub-block
// 2c) and 64c + 32 + 4q + j (high nibble, sub-block 2c + 1).
size_t q4_k_offset(int r, size_t i) {
  if (i < 4) return (i < 2 ? 0 : 32) + 2 * size_t(r) + i % 2;
  if (i < 16) return lanes(64, (i - 4) / 4, r, (i - 4) % 4);
  return lanes(256, (i - 16) / 4, r, (i - 16) % 4);
}

// Q6_K (210): ql [half 2][kk 2][quad 8][row][4] | qh [half 2][quad 8][row][4] |
// scales [dword 4][row][4] | d[16]. ql byte 64h + 32kk + 4q + j holds the low
// four bits of elements 128h + 32kk + 4q + j (low nibble) and of those 64 on
// (high nibble); qh byte 32h + 4q + j their top two bits, 2 per 32 on.
size_t q6_k_offset(int r, size_t i) {
  if (i < 128) return lanes(0, i / 4, r, i % 4);  // (64h + 32kk + 4q) / 4 = (2h + kk) * 8 + q
  if (i < 192) return lanes(2048, (i - 128) / 4, r, (i - 128) % 4);
  if (i < 208) return lanes(3072, (i - 192) / 4, r, (i - 192) % 4);
  return 3328 + 2 * size_t(r) + (i - 208);
}

// Q5_1 (24): d[16] | m[16] | qh [row][4] | qs as Q4_0's.
size_t q5_1_offset(int r, size_t i) {
  if (i < 4) return (i < 2 ? 0 : 32) + 2 * size_t(r) + i % 2;
  if (i < 8) return lanes(64, 0, r, i - 4);
  return lanes(128, (i - 8) / 4, r, (i - 8) % 4);
}

// Q5_K (176): Q4_K's d, dmin and scales | qh [quad 8][row][4] | qs as Q4_K's
// (qh byte 4q + j holds the fifth bits of elements 32k + 4q + j, bit k).
size_t q5_k_offset(int r, size_t i) {
  if (i < 16) return q4_k_offset(r, i);
  if (i < 48) return lanes(256, (i - 16) / 4, r, (i - 16) % 4);
  return lanes(768, (i - 48) / 4, r, (i - 48) % 4);
}

// Q2_K (84): scales [4][row][4] | qs [half 2][quad 8][row][4] | d[16] | dmin[16].
// qs byte 32h + 4q + j holds elements 128h + 32s + 4q + j at bits 2s.
size_t q2_k_offset(int r, size_t i) {
  if (i < 80) return lanes(0, i / 4, r, i % 4);  // scales then qs: 20 groups
  return 1280 + (i < 82 ? 0 : 32) + 2 * size_t(r) + i % 2;
}

// Q3_K (110): hmask [quad 8][row][4] | qs as Q2_K's | scales [3][row][4] | d[16].
size_t q3_k_offset(int r, size_t i) {
  if (i < 108) return lanes(0, i / 4, r, i % 4);  // hmask, qs, scales: 27 groups
  return 1728 + 2 * size_t(r) + (i - 108);
}

// MXFP4 (17): e[16] (each row's E8M0 byte) | qs [quad 4][row][4], as Q4_0's.
size_t mxfp4_offset(int r, size_t i) { return i == 0 ? size_t(r) : lanes(16, (i - 1) / 4, r, (i - 1) % 4); }

// IQ4_XS (136): d[16] | scales_h[16] | scales_l [row][4] | qs [sub 8][quad 4][row][4].
size_t iq4_xs_offset(int r, size_t i) { return q5_1_offset(r, i); }  // the same shape up to byte 8, then groups

struct Layout {
  size_t block_bytes;  // of one row's block
  size_t (*offset)(int r, size_t i);
  uint8_t code_offset;  // added to the bytes from code_from on (Q8_0: signed codes made unsigned)
  size_t code_from;
};

Layout layout(TensorType t) {
  switch (t) {
    case TensorType::Q8_0: return {sizeof(BlockQ8_0), q8_0_offset, 128, 2};
    case TensorType::Q4_0: return {sizeof(BlockQ4_0), q4_0_offset, 0, 0};
    case TensorType::Q5_0: return {sizeof(BlockQ5_0), q5_0_offset, 0, 0};
    case TensorType::Q4_K: return {sizeof(BlockQ4_K), q4_k_offset, 0, 0};
    case TensorType::Q6_K: return {sizeof(BlockQ6_K), q6_k_offset, 0, 0};
    case TensorType::Q5_1: return {sizeof(BlockQ5_1), q5_1_offset, 0, 0};
    case TensorType::IQ4_NL: return {sizeof(BlockIQ4_NL), q4_0_offset, 0, 0};
    case TensorType::MXFP4: return {sizeof(BlockMXFP4), mxfp4_offset, 0, 0};
    case TensorType::Q2_K: return {sizeof(BlockQ2_K), q2_k_offset, 0, 0};
    case TensorType::Q3_K: return {sizeof(BlockQ3_K), q3_k_offset, 0, 0};
    case TensorType::Q5_K: return {sizeof(BlockQ5_K), q5_k_offset, 0, 0};
    case TensorType::IQ4_XS: return {sizeof(BlockIQ4_XS), iq4_xs_offset, 0, 0};
    default: fail<Unsupported>("no row panels for {}", tensor_type_name(t));
  }
}

// offset(r, i) for every row and byte of a block, tabulated: packing a 1B
// model calls it for every byte.
std::vector<uint16_t> offsets(const Layout& l) {
  std::vector<uint16_t> map(kRows * l.block_bytes);
  for (int r = 0; r < kPanelRows; ++r)
    for (size_t i = 0; i < l.block_bytes; ++i) map[size_t(r) * l.block_bytes + i] = uint16_t(l.offset(r, i));
  return map;
}

}  // namespace

bool has_panels(TensorType t) { return has_quantized_dot(t); }

int pack_panels(TensorType t, uint8_t* data, size_t row_bytes, int rows) {
  const Layout l = layout(t);
  const auto map = offsets(l);
  const size_t nb = row_bytes / l.block_bytes;
  const int packed = rows / kPanelRows * kPanelRows;
  std::vector<uint8_t> src(kRows * row_bytes);
  for (int r0 = 0; r0 < packed; r0 += kPanelRows) {
    uint8_t* panel = data + size_t(r0) * row_bytes;
    std::memcpy(src.data(), panel, kRows * row_bytes);
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* out = panel + b * kRows * l.block_bytes;
      for (int r = 0; r < kPanelRows; ++r) {
        const uint8_t* in = src.data() + size_t(r) * row_bytes + b * l.block_bytes;
        const uint16_t* to = map.data() + size_t(r) * l.block_bytes;
        for (size_t i = 0; i < l.code_from; ++i) out[to[i]] = in[i];
        for (size_t i = l.code_from; i < l.block_bytes; ++i) out[to[i]] = uint8_t(in[i] + l.code_offset);
      }
    }
  }
  return packed;
}

void unpack_panel_row(TensorType t, const uint8_t* panel, size_t row_bytes, int lane, uint8_t* out) {
  const Layout l = layout(t);
  const size_t nb = row_bytes / l.block_bytes;
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* in = panel + b * kRows * l.block_bytes;
    for (size_t i = 0; i < l.block_bytes; ++i)
      out[b * l.block_bytes + i] = uint8_t(in[l.offset(lane, i)] - (i >= l.code_from ? l.code_offset : 0));
  }
}

void prepare_panel_activations(TensorType t, const void* x, size_t x_stride, int n_tokens, size_t nb,
                               PanelActivations& a) {
  if (!has_panels(t)) fail<Unsupported>("no row panels for {}", tensor_type_name(t));
  a.type = t;
  a.nb = nb;
  a.n_tokens = n_tokens;
  a.rows = static_cast<const uint8_t*>(x);
  a.row_stride = x_stride;
  const bool legacy = activation_type(t) == TensorType::Q8_0;  // Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL, MXFP4
  const bool q4_k = t == TensorType::Q4_K || t == TensorType::Q5_K;
  const bool eight = t == TensorType::Q2_K || t == TensorType::IQ4_XS;
  a.terms_per_block = legacy ? 1 : q4_k ? 4 : eight ? 8 : 16;
  // The 32-element formats: the stored codes are unsigned, value = code -
  // offset; Q5_1's term is the plain sum (its min's factor).
  const int32_t offset = t == TensorType::Q8_0 || t == TensorType::IQ4_NL || t == TensorType::MXFP4 ? 128
                         : t == TensorType::Q5_0                                                    ? 16
                         : t == TensorType::Q5_1                                                    ? 1
                                                                                                    : 8;
  a.scales.resize(size_t(n_tokens) * nb);
  a.terms.resize(size_t(n_tokens) * nb * a.terms_per_block);
  for (int k = 0; k < n_tokens; ++k) {
    const uint8_t* row = a.rows + size_t(k) * x_stride;
    for (size_t b = 0; b < nb; ++b) {
      const size_t i = size_t(k) * nb + b;
      int32_t* terms = a.terms.data() + i * a.terms_per_block;
      if (legacy) {
        const BlockQ8_0& x_b = reinterpret_cast<const BlockQ8_0*>(row)[b];
        int32_t sum = 0;
        for (int8_t c : x_b.qs) sum += c;
        a.scales[i] = f16_to_f32(x_b.d);
        terms[0] = offset * sum;  // the code offset's share of the block sum
        continue;
      }
      const BlockQ8_K& x_b = reinterpret_cast<const BlockQ8_K*>(row)[b];
      a.scales[i] = x_b.d;
      if (q4_k) {
        // The sums of the 8 sub-blocks of 32, as 16-bit pairs (0, 2), (1, 3),
        // (4, 6), (5, 7): the min-weighted sum is 4 vpdpwssd against the mins.
        int32_t s[8];
        for (int j = 0; j < 8; ++j) s[j] = int32_t(x_b.bsums[2 * j]) + x_b.bsums[2 * j + 1];
        const int pairs[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
        for (int p = 0; p < 4; ++p)
          terms[p] = int32_t(uint32_t(uint16_t(s[pairs[p][0]])) | uint32_t(uint16_t(s[pairs[p][1]])) << 16);
      } else if (t == TensorType::Q2_K) {
        // The 16 sub-block sums as 16-bit pairs (4g, 4g + 2), (4g + 1, 4g + 3),
        // against the mins by vpdpwssd as Q4_K's.
        auto pair = [&](int lo, int hi) {
          return int32_t(uint32_t(uint16_t(x_b.bsums[lo])) | uint32_t(uint16_t(x_b.bsums[hi])) << 16);
        };
        for (int g = 0; g < 4; ++g) {
          terms[2 * g] = pair(4 * g, 4 * g + 2);
          terms[2 * g + 1] = pair(4 * g + 1, 4 * g + 3);
        }
      } else if (t == TensorType::IQ4_XS) {  // the stored values' offset 128, per 32
        for (int j = 0; j < 8; ++j) terms[j] = 128 * (int32_t(x_b.bsums[2 * j]) + x_b.bsums[2 * j + 1]);
      } else {
        // The code offset's share per 16: Q6_K's 32, Q3_K's 4.
        const int32_t code_offset = t == TensorType::Q3_K ? 4 : 32;
        for (int j = 0; j < 16; ++j) terms[j] = code_offset * int32_t(x_b.bsums[j]);
      }
    }
  }
}

void panel_dot_reference(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens,
                         float* out, size_t out_stride) {
  const Layout l = layout(t);
  const size_t n = a.nb * size_t(block_elems(t));
  std::vector<uint8_t> row(a.nb * l.block_bytes);
  for (int r = 0; r < kPanelRows; ++r) {
    unpack_panel_row(t, panel, row.size(), r, row.data());
    for (int k = 0; k < n_tokens; ++k)
      out[size_t(k) * out_stride + size_t(r)] = vec_dot(t, row.data(), a.rows + size_t(first + k) * a.row_stride, n);
  }
}

}  // namespace pagoda
