#include "model/ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <span>
#include <vector>

#include "kernels/activations.h"
#include "kernels/float_matmul.h"
#include "kernels/panels.h"
#include "kernels/quant_dot.h"
#include "util/error.h"
#include "kernels/quantize_activations.h"
#include "quant/dot.h"
#include "quant/rows.h"
#include "util/shared_steps.h"

namespace pagoda {
namespace {

// Rows per unit of work split between threads.
constexpr int kRowTile = 16;
// Far-apart row streams per thread for one token (see for_decode_streams): as
// many as the fused kernel keeps rows in flight.
constexpr size_t kFusedStreams = 8;

// Quantized weights: each activation row is quantized once per call to the
// 8-bit format the weight type's kernel takes, then every output element is
// an integer-per-block dot of a weight row with it. A matrix packed into row
// panels at load (kernels/panels.h, AVX-512 VNNI) takes matmul_panels for any
// number of tokens. Row-major ones take the kernels of kernels/quant_dot.h: for
// one token, 4 far-apart rows at a time (for_decode_streams); for 8 or more on
// AVX-512 VNNI, token groups (matmul_token_groups); otherwise tiles of up to
// 4 weight rows x vec_dot_tile_tokens() tokens (8 on AVX-512, else 4), so a
// decoded weight block serves several tokens. The weights are never
// decoded to floats; a tile of kQuantRowTile rows (under 50 KB even for the
// 5632-wide FFN down rows) stays in L1/L2 while every token passes over it.
// Each output is bit-identical to the scalar kernel's whatever the path,
// batch or thread split.
constexpr int kQuantRowTile = 16;

// Decode (one token) is a race against memory. Its loops over n items (rows
// or row panels) cut them into one part per thread and each part into
// `pieces` equal pieces read side by side: step(first, stride) runs items
// first + s * stride for s < pieces, the next item of every piece. The
// hardware keeps more reads in flight for several distant streams than for
// one, or for adjacent items read side by side. A thread done with its part
// takes the others' last steps (util/shared_steps.h): the cores do not get
// equal shares of memory. Figures for both: docs/performance.md, appendix
// "Kernel tuning". Items left over by the cut run one at a time, single(i).
template <class Step, class Single>
void for_decode_streams(ThreadPool& pool, size_t n, size_t pieces, size_t work, const Step& step,
                        const Single& single) {
  const size_t parts = size_t(pool.size());
  const size_t piece = n / (parts * pieces);  // items per piece: the steps of a part
  SharedSteps steps(parts, uint32_t(piece));
  std::atomic<size_t> next_single{parts * pieces * piece};
  auto run = [&](size_t part, uint32_t i) { step(part * pieces * piece + i, piece); };
  pool.parallel_for(
      parts,
      [&](size_t begin, size_t end) {
        for (size_t part = begin; part < end; ++part)
          while (const auto r = steps.take_front(part))
            for (uint32_t i = r->first; i < r->second; ++i) run(part, i);
        for (size_t i; (i = next_single.fetch_add(1, std::memory_order_relaxed)) < n;) single(i);
        while (const auto taken = steps.take_back()) run(taken->first, taken->second);
      },
      1, work);
}

// One token against rows: `kStreams` rows a step through kernel(first,
// stride, n, out), which computes rows first + s * stride for s < n into out.
template <size_t kStreams, class Kernel>
void decode_rows(ThreadPool& pool, size_t rows, size_t work, float* y, const Kernel& kernel) {
  for_decode_streams(
      pool, rows, kStreams, work,
      [&](size_t first, size_t stride) {
        float out[kStreams];
        kernel(first, stride, kStreams, out);
        for (size_t s = 0; s < kStreams; ++s) y[first + s * stride] = out[s];
      },
      [&](size_t r) { kernel(r, 1, 1, y + r); });
}

// Many tokens against Q4_0 / Q5_0 / Q4_K / Q6_K weights on AVX-512 VNNI: the
// tokens' 8-bit activations transposed once into groups of 16
// (kernels/quant_dot.h), then 4 weight rows at a time are decoded once per group
// and every token is a vector lane, with no per-block horizontal sums (which
// cost the tiles most of their time): about 2.5x the tiles' speed
// (docs/performance.md appendix). The same bits as the tiles.
constexpr int kMinGroupTokens = 8;

void matmul_token_groups(const Matrix& w, TensorType xt, const uint8_t* xq, size_t x_bytes, int n_tokens, float* y,
                         ThreadPool& pool) {
  const size_t nb = size_t(w.cols) / size_t(block_elems(w.type));
  std::vector<TokenGroup> groups(size_t((n_tokens + kGroupTokens - 1) / kGroupTokens));
  pool.parallel_for(
      groups.size(),
      [&](size_t begin, size_t end) {
        for (size_t g = begin; g < end; ++g)
          prepare_token_group(xt, xq + g * kGroupTokens * x_bytes, x_bytes,
                              std::min(kGroupTokens, n_tokens - int(g) * kGroupTokens), nb, groups[g]);
      },
      1, size_t(n_tokens) * size_t(w.cols));
  pool.parallel_for(
      size_t(w.rows),
      [&](size_t begin, size_t end) {
        float out[kDotRowsMax * kGroupTokens];
        for (size_t r0 = begin; r0 < end; r0 += kQuantRowTile) {
          const size_t r1 = std::min(end, r0 + kQuantRowTile);
          for (size_t g = 0; g < groups.size(); ++g)
            for (size_t r = r0; r < r1; r += kDotRowsMax) {
              const int nr = int(std::min(size_t(kDotRowsMax), r1 - r));
              token_group_dot(w.type, w.row(int(r)), w.row_bytes, nr, groups[g], out);
              for (int i = 0; i < nr; ++i)
                for (int k = 0; k < groups[g].n_tokens; ++k)
                  y[(g * kGroupTokens + size_t(k)) * size_t(w.rows) + r + size_t(i)] = out[kGroupTokens * i + k];
            }
        }
      },
      kQuantRowTile, size_t(w.rows) * size_t(w.cols) * size_t(n_tokens));
}

// The row-major matrices: xq holds n_tokens rows of activation_type(w.type).
void matmul_rows_quantized(const Matrix& w, const uint8_t* xq, size_t x_bytes, int n_tokens, float* y,
                           ThreadPool& pool) {
  const size_t cols = size_t(w.cols);
  const TensorType xt = activation_type(w.type);
  if (n_tokens == 1) {
    decode_rows<kDotRowsMax>(
        pool, size_t(w.rows), size_t(w.rows) * cols, y, [&](size_t first, size_t stride, size_t n, float* out) {
          vec_dot_tile(w.type, w.row(int(first)), stride * w.row_bytes, int(n), xq, x_bytes, 1, cols, out, 1);
        });
    return;
  }
  if (n_tokens >= kMinGroupTokens && prefers_token_groups(w.type))
    return matmul_token_groups(w, xt, xq, x_bytes, n_tokens, y, pool);
  const int tile_tokens = vec_dot_tile_tokens();
  pool.parallel_for(
      size_t(w.rows),
      [&](size_t begin, size_t end) {
        for (size_t r0 = begin; r0 < end; r0 += kQuantRowTile) {
          const size_t r1 = std::min(end, r0 + kQuantRowTile);
          for (int t = 0; t < n_tokens; t += tile_tokens) {
            const int nt = std::min(tile_tokens, n_tokens - t);
            for (size_t r = r0; r < r1; r += kDotRowsMax) {
              const int nr = int(std::min(size_t(kDotRowsMax), r1 - r));
              vec_dot_tile(w.type, w.row(int(r)), w.row_bytes, nr, xq + size_t(t) * x_bytes, x_bytes, nt, cols,
                           y + size_t(t) * w.rows + r, size_t(w.rows));
            }
          }
        }
      },
      kQuantRowTile, size_t(w.rows) * cols * size_t(n_tokens));
}

// Row panels (kernels/panels.h), for matrices packed at load: every row of a
// panel is a vector lane, so a panel's 16 rows take one pass over the blocks
// with no horizontal sums, whatever the batch (tokens up to 8 at a time). The
// matrices (one, or several on the same input whose types share an
// activation type, as Q4_K_M's Q4_K and Q6_K Q/K/V) form one range of
// panels, split between the threads in consecutive parts, in one parallel
// loop. Decode (one token) cuts each thread's part again into pieces read
// side by side (panel_decode_streams, 1-2): one sequential stream per core
// kept too few memory reads in flight before the kernels prefetched. Rows
// past a matrix's last whole panel take the row kernels.
void matmul_panels(std::span<const MatmulOut> outs, const uint8_t* xq, size_t x_bytes, int n_tokens, ThreadPool& pool) {
  const size_t cols = size_t(outs[0].w.cols);
  // The activations' scales and terms, once per weight type among the matrices.
  std::vector<PanelActivations> acts;
  std::vector<const PanelActivations*> act_of(outs.size());
  acts.reserve(outs.size());  // act_of points into it
  for (size_t i = 0; i < outs.size(); ++i) {
    const TensorType t = outs[i].w.type;
    auto it = std::find_if(acts.begin(), acts.end(), [&](const PanelActivations& a) { return a.type == t; });
    if (it == acts.end()) {
      prepare_panel_activations(t, xq, x_bytes, n_tokens, cols / size_t(block_elems(t)), acts.emplace_back());
      it = acts.end() - 1;
    }
    act_of[i] = &*it;
  }
  std::vector<size_t> first(outs.size() + 1, 0);  // matrix i's panels: first[i] .. first[i + 1] - 1
  for (size_t i = 0; i < outs.size(); ++i) first[i + 1] = first[i] + size_t(outs[i].w.panel_rows / kPanelRows);
  // Panel p: its bytes, its activations (and so its type), where its outputs
  // go (token 0) and its matrix's rows (the stride between tokens' outputs).
  struct Located {
    const uint8_t* panel;
    const PanelActivations* a;
    float* y;
    size_t rows;
  };
  auto locate = [&](size_t p) {
    const size_t m = size_t(std::upper_bound(first.begin(), first.end(), p) - first.begin()) - 1;
    const size_t local = p - first[m];
    return Located{outs[m].w.panel(int(local) * kPanelRows), act_of[m], outs[m].y + local * kPanelRows,
                   size_t(outs[m].w.rows)};
  };
  const size_t n_panels = first.back(), work = n_panels * kPanelRows * cols * size_t(n_tokens);
  if (n_tokens == 1) {
    const size_t pieces = size_t(panel_decode_streams(outs[0].w.type));
    for_decode_streams(
        pool, n_panels, pieces, work,
        [&](size_t i0, size_t stride) {
          Located ps[kPanelStreamsMax];
          const uint8_t* panels[kPanelStreamsMax];
          float* ys[kPanelStreamsMax];
          bool one_type = true;
          for (size_t s = 0; s < pieces; ++s) {
            ps[s] = locate(i0 + s * stride);
            panels[s] = ps[s].panel;
            ys[s] = ps[s].y;
            one_type = one_type && ps[s].a == ps[0].a;
          }
          if (one_type) return panel_dot_streams(ps[0].a->type, panels, int(pieces), *ps[0].a, 0, ys);
          for (size_t s = 0; s < pieces; ++s)
            panel_dot(ps[s].a->type, ps[s].panel, *ps[s].a, 0, 1, ps[s].y, kPanelRows);
        },
        [&](size_t i) {
          const Located p = locate(i);
          panel_dot(p.a->type, p.panel, *p.a, 0, 1, p.y, kPanelRows);
        });
  } else {
    pool.parallel_for(
        n_panels,
        [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) {
            const Located p = locate(i);
            for (int t = 0; t < n_tokens; t += kPanelTokensMax)
              panel_dot(p.a->type, p.panel, *p.a, t, std::min(kPanelTokensMax, n_tokens - t), p.y + size_t(t) * p.rows,
                        p.rows);
          }
        },
        1, work);
  }
  for (const MatmulOut& o : outs) {
    const Matrix& w = o.w;
    if (w.panel_rows == w.rows) continue;
    Matrix tail = w;  // the rows after the panels, as a row-major matrix of their own
    tail.data = w.row(w.panel_rows);
    tail.rows = w.rows - w.panel_rows;
    tail.panel_rows = 0;
    std::vector<float> out(size_t(n_tokens) * size_t(tail.rows));
    matmul_rows_quantized(tail, xq, x_bytes, n_tokens, out.data(), pool);
    for (int t = 0; t < n_tokens; ++t)
      std::copy_n(out.data() + size_t(t) * tail.rows, tail.rows, o.y + size_t(t) * w.rows + size_t(w.panel_rows));
  }
}

// x quantized once to the matrices' activation type (they share it).
std::vector<uint8_t> quantize_input(const Matrix& w, const float* x, int n_tokens, ThreadPool& pool) {
  const size_t cols = size_t(w.cols);
  const TensorType xt = activation_type(w.type);
  const size_t x_bytes = row_bytes(xt, cols);
  std::vector<uint8_t> xq(size_t(n_tokens) * x_bytes);
  auto quantize_rows = [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) quantize_activations(xt, x + t * cols, xq.data() + t * x_bytes, cols);
  };
  pool.parallel_for(size_t(n_tokens), quantize_rows, 1, size_t(n_tokens) * cols * 4);
  return xq;
}

void matmul_quantized(const Matrix& w, const float* x, int n_tokens, float* y, ThreadPool& pool) {
  const auto xq = quantize_input(w, x, n_tokens, pool);
  const size_t x_bytes = row_bytes(activation_type(w.type), size_t(w.cols));
  if (w.panel_rows > 0) {
    const MatmulOut out{w, y};
    return matmul_panels({&out, 1}, xq.data(), x_bytes, n_tokens, pool);
  }
  matmul_rows_quantized(w, xq.data(), x_bytes, n_tokens, y, pool);
}

}  // namespace

void matmul(const Matrix& w, const float* x, int n_tokens, float* y, ThreadPool& pool) {
  if (has_quantized_dot(w.type)) return matmul_quantized(w, x, n_tokens, y, pool);
  const size_t cols = size_t(w.cols);
  const size_t work = size_t(w.rows) * cols * size_t(n_tokens);
  // The float kernel decodes the stored rows in registers (F16, BF16; F32
  // as they are), the same results as decoding them first (kernels/float_matmul.h).
  // One token: each thread's rows as far-apart streams.
  if (n_tokens == 1) {
    decode_rows<kFusedStreams>(pool, size_t(w.rows), work, y, [&](size_t first, size_t stride, size_t n, float* out) {
      matmul_rows_fused(w.type, w.row(int(first)), stride * w.row_bytes, n, x, cols, 1, cols, out, 1);
    });
    return;
  }
  // Several tokens: the kernel holds a block of tokens in L1 while the rows
  // pass by.
  pool.parallel_for(
      size_t(w.rows),
      [&](size_t begin, size_t end) {
        matmul_rows_fused(w.type, w.row(int(begin)), w.row_bytes, end - begin, x, cols, size_t(n_tokens), cols,
                          y + begin, size_t(w.rows));
      },
      kRowTile, work);
}

void matmul(std::span<const MatmulOut> outs, const float* x, int n_tokens, ThreadPool& pool) {
  if (outs.empty()) return;
  const Matrix& w0 = outs.front().w;
  // Matrices in panels whose types quantize the input alike (the kernels
  // differ per panel; the activations' scales and terms are made per type).
  const bool together = std::all_of(outs.begin(), outs.end(), [&](const MatmulOut& o) {
    return o.w.panel_rows > 0 && activation_type(o.w.type) == activation_type(w0.type) && o.w.cols == w0.cols;
  });
  if (!together || n_tokens < 1) {
    for (const MatmulOut& o : outs) matmul(o.w, x, n_tokens, o.y, pool);
    return;
  }
  const auto xq = quantize_input(w0, x, n_tokens, pool);
  matmul_panels(outs, xq.data(), row_bytes(activation_type(w0.type), size_t(w0.cols)), n_tokens, pool);
}

void read_row(const Matrix& w, int r, float* out) {
  if (r >= w.panel_rows) return dequantize_row_simd(w.type, w.row(r), out, size_t(w.cols));
  thread_local std::vector<uint8_t> row;
  row.resize(w.row_bytes);
  unpack_panel_row(w.type, w.panel(r), w.row_bytes, r % kPanelRows, row.data());
  dequantize_row(w.type, row.data(), out, size_t(w.cols));
}

void rmsnorm(const float* x, const float* weight, int n, float eps, float* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float scale = float(1.0 / std::sqrt(ss / n + eps));
  if (!weight) {
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale;
    return;
  }
  for (int i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void layernorm(const float* x, const float* weight, const float* bias, int n, float eps, float* out) {
  double sum = 0, var = 0;  // in double, as ggml's norm
  for (int i = 0; i < n; ++i) sum += x[i];
  const float mean = float(sum / n);
  for (int i = 0; i < n; ++i) var += double(x[i] - mean) * double(x[i] - mean);
  const float scale = 1.0f / std::sqrt(float(var / n) + eps);
  for (int i = 0; i < n; ++i) out[i] = (x[i] - mean) * scale * weight[i] + bias[i];
}

void gelu_tanh(float* x, int n) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f, kCoef = 0.044715f;
  for (int i = 0; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::tanh(kSqrt2OverPi * x[i] * (1.0f + kCoef * x[i] * x[i])));
}

void swiglu(float* gate, const float* up, int n) { swiglu_simd(gate, up, size_t(n)); }
void geglu_tanh(float* gate, const float* up, int n) { geglu_tanh_simd(gate, up, size_t(n)); }

void gated_activation(Activation act, float* gate, const float* up, int n) {
  switch (act) {
    case Activation::SiLU: return swiglu(gate, up, n);
    case Activation::GeluTanh: return geglu_tanh(gate, up, n);
    case Activation::Gelu: fail<InvalidArgument>("GELU is not a gated activation");
    case Activation::SwigluOai: {
      constexpr float kAlpha = 1.702f, kLimit = 7.0f;  // gpt-oss's constants (not in its files)
      for (int i = 0; i < n; ++i) {
        const float g = std::min(gate[i], kLimit), u = std::clamp(up[i], -kLimit, kLimit);
        gate[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
      }
      return;
    }
  }
}

}  // namespace pagoda
