// Row panels (quant/panels.h): the layout, packing and unpacking, and the
// scalar reference kernel. The AVX-512 VNNI kernel is in panel_dot_avx512.cpp.
#include "quant/panels.h"

#include <cstring>

#include "quant/blocks.h"
#include "quant/dot.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {
namespace {

constexpr size_t kQuads = kQK / 4;
constexpr uint8_t kCodeOffset = 128;

// Q8_0 panel block b: 16 F16 scales, then codes[quad][row][4].
constexpr size_t kPanelBlockBytes = kPanelRows * sizeof(BlockQ8_0);
constexpr size_t kScaleBytes = kPanelRows * sizeof(uint16_t);
static_assert(kScaleBytes + kQuads * kPanelRows * 4 == kPanelBlockBytes);

size_t code_at(size_t quad, int row) { return kScaleBytes + (quad * kPanelRows + size_t(row)) * 4; }

void check_type(TensorType t) {
  if (!has_panels(t)) fail<Unsupported>("no row panels for {}", tensor_type_name(t));
}

}  // namespace

bool has_panels(TensorType t) { return t == TensorType::Q8_0; }

int pack_panels(TensorType t, uint8_t* data, size_t row_bytes, int rows) {
  check_type(t);
  const size_t nb = row_bytes / sizeof(BlockQ8_0);
  const int packed = rows / kPanelRows * kPanelRows;
  std::vector<BlockQ8_0> src(size_t(kPanelRows) * nb);
  for (int r0 = 0; r0 < packed; r0 += kPanelRows) {
    uint8_t* panel = data + size_t(r0) * row_bytes;
    std::memcpy(src.data(), panel, kPanelRows * row_bytes);
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* out = panel + b * kPanelBlockBytes;
      for (int r = 0; r < kPanelRows; ++r) {
        const BlockQ8_0& block = src[size_t(r) * nb + b];
        std::memcpy(out + 2 * r, &block.d, 2);
        for (size_t q = 0; q < kQuads; ++q)
          for (size_t i = 0; i < 4; ++i) out[code_at(q, r) + i] = uint8_t(block.qs[4 * q + i] + kCodeOffset);
      }
    }
  }
  return packed;
}

void unpack_panel_row(TensorType t, const uint8_t* panel, size_t row_bytes, int lane, uint8_t* out) {
  check_type(t);
  const size_t nb = row_bytes / sizeof(BlockQ8_0);
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* in = panel + b * kPanelBlockBytes;
    BlockQ8_0 block;
    std::memcpy(&block.d, in + 2 * lane, 2);
    for (size_t q = 0; q < kQuads; ++q)
      for (size_t i = 0; i < 4; ++i) block.qs[4 * q + i] = int8_t(in[code_at(q, lane) + i] - kCodeOffset);
    std::memcpy(out + b * sizeof(BlockQ8_0), &block, sizeof(BlockQ8_0));
  }
}

void prepare_panel_activations(TensorType t, const void* x, size_t x_stride, int n_tokens, size_t nb,
                               PanelActivations& a) {
  check_type(t);
  a.nb = nb;
  a.n_tokens = n_tokens;
  a.rows = static_cast<const uint8_t*>(x);
  a.row_stride = x_stride;
  a.scales.resize(size_t(n_tokens) * nb);
  a.offsets.resize(size_t(n_tokens) * nb);
  for (int k = 0; k < n_tokens; ++k) {
    const auto* row = reinterpret_cast<const BlockQ8_0*>(a.rows + size_t(k) * x_stride);
    for (size_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int8_t c : row[b].qs) sum += c;
      a.scales[size_t(k) * nb + b] = f16_to_f32(row[b].d);
      a.offsets[size_t(k) * nb + b] = kCodeOffset * sum;
    }
  }
}

void panel_dot_reference(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens,
                         float* out, size_t out_stride) {
  check_type(t);
  for (int k = 0; k < n_tokens; ++k) {
    const auto* x = reinterpret_cast<const BlockQ8_0*>(a.rows + size_t(first + k) * a.row_stride);
    for (int r = 0; r < kPanelRows; ++r) {
      float sum = 0;
      for (size_t b = 0; b < a.nb; ++b) {
        const uint8_t* in = panel + b * kPanelBlockBytes;
        int32_t dot = 0;
        for (size_t q = 0; q < kQuads; ++q)
          for (size_t i = 0; i < 4; ++i) dot += (int32_t(in[code_at(q, r) + i]) - kCodeOffset) * x[b].qs[4 * q + i];
        uint16_t d;
        std::memcpy(&d, in + 2 * r, 2);
        sum += f16_to_f32(d) * f16_to_f32(x[b].d) * float(dot);  // as vec_dot_q8_0_q8_0
      }
      out[size_t(k) * out_stride + size_t(r)] = sum;
    }
  }
}

}  // namespace pagoda
