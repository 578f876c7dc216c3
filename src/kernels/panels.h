// Row panels: a weight matrix's rows regrouped 16 at a time so that a vector
// lane holds one row. Decode multiplies a matrix by one token; with rows side
// by side in the lanes of a 512-bit vector, one vpdpbusd multiplies 4 codes of
// each of 16 rows by the same 4 activation codes (broadcast), and the 16 rows'
// sums never need a horizontal reduction. Row-major kernels spend most of their
// time in those reductions (slower than memory on the machines measured,
// docs/performance.md); the panel kernel outruns the memory.
//
// A panel occupies exactly the bytes of its 16 rows, so a matrix read into
// memory is rearranged in place (pack_panels) when the model loads; rows past
// the last whole panel stay row-major. Per block b (32 or 256 columns), the
// 16 rows' blocks b are regrouped so that every 64-byte load holds 4 bytes of
// each row: Q8_0, for example (16 x 34 bytes):
//   uint16_t d[16]             the rows' F16 scales
//   uint8_t  codes[8][16][4]   quad q (columns 4q..4q+3) of row r: code + 128
// (Q8_0 codes are stored offset to unsigned: vpdpbusd multiplies unsigned by
// signed bytes; the offset times the activations' sum is subtracted per
// block.) The other formats keep their bytes, regrouped alike (panels.cpp).
//
// Results are bit-identical to vec_dot of quant/dot.h on the original rows:
// the same exact integer block sums, the same float expression in block order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/types.h"

namespace pagoda {

inline constexpr int kPanelRows = 16;
inline constexpr int kPanelTokensMax = 8;  // tokens per panel_dot call

// Whether a panel layout exists for weights of type t (every quantized
// weight type: has_quantized_dot).
bool has_panels(TensorType t);
// Whether this CPU runs panels of t fast (AVX-512 VNNI, or AVX2): only then
// are matrices packed.
bool prefers_panels(TensorType t);

// Rearranges the first (rows / 16) * 16 rows of a row-major matrix of type t
// (has_panels) into panels, in place; returns how many rows it packed.
int pack_panels(TensorType t, uint8_t* data, size_t row_bytes, int rows);

// Writes the original bytes (row_bytes) of row `lane` of the panel at `panel`.
void unpack_panel_row(TensorType t, const uint8_t* panel, size_t row_bytes, int lane, uint8_t* out);

// Activation rows prepared for the panel kernels: the 8-bit rows (as
// quantize_activations writes them for activation_type(t)) and, per token and
// block, the scale as a float and integer terms from the codes' sums: Q8_0,
// Q4_0, Q5_0 the code offset (128, 8, 16) x the block's, Q4_K the 8 sub-block sums as
// 4 pairs of 16 bits (against the mins), Q6_K 32 x each of the 16 (its code
// offset's share).
struct PanelActivations {
  TensorType type = TensorType::Q8_0;  // of the weights
  size_t nb = 0;                       // blocks per row
  int n_tokens = 0;
  const uint8_t* rows = nullptr;
  size_t row_stride = 0;
  size_t terms_per_block = 0;
  std::vector<float> scales;   // [token][block]
  std::vector<int32_t> terms;  // [token][block][terms_per_block]
};
void prepare_panel_activations(TensorType t, const void* x, size_t x_stride, int n_tokens, size_t nb,
                               PanelActivations& a);

// out[k * out_stride + r] = vec_dot(t, row r of the panel, token first + k)
// for r < kPanelRows and k < n_tokens (1..kPanelTokensMax).
void panel_dot(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens, float* out,
               size_t out_stride);
// One token (`token`) against n panels read side by side, a block of each in
// turn: outs[i] gets panel_dot's 16 values for panels[i]. Decode runs a
// thread's panels as far-apart streams this way; one sequential stream per
// core keeps too few reads in flight. Without the SIMD kernels, the panels
// run one after the other. n: 1 .. kPanelStreamsMax.
inline constexpr int kPanelStreamsMax = 4;
void panel_dot_streams(TensorType t, const uint8_t* const* panels, int n, const PanelActivations& a, int token,
                       float* const* outs);
// How many panels decode reads side by side for t: the count measured best
// (1B decode, steps alternating between counts; figures in
// docs/performance.md, appendix "Kernel tuning"). AVX-512 VNNI: 2, but 1 for
// Q6_K, whose kernel does the most arithmetic a byte. AVX2: 2 for the
// 32-element formats, 1 for the 256-element ones. (The formats added later,
// Q5_1 to IQ4_XS, follow their kin's counts, not measured one by one.)
int panel_decode_streams(TensorType t);
// The scalar kernel behind it: the reference, and the fallback on other CPUs.
void panel_dot_reference(TensorType t, const uint8_t* panel, const PanelActivations& a, int first, int n_tokens,
                         float* out, size_t out_stride);

}  // namespace pagoda
