// matmul (model/ops.h) against one dot product per output, for every weight
// type: each output must equal the single-row kernel bit for bit whatever
// the number of tokens, rows or threads, which covers the ways matmul walks
// the rows (far-apart row streams for one token, tiles or token groups for
// several, and the rows left over by either), and of matrices packed into row
// panels (kernels/panels.h; the rows past the last whole panel row-major).
#include <gtest/gtest.h>

#include <array>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/float_matmul.h"
#include "kernels/panels.h"
#include "kernels/quant_dot.h"
#include "kernels/simd_targets.h"
#include "model/ops.h"
#include "quant/dot.h"
#include "quant/rows.h"

namespace pagoda {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The reference for one output: the row's dot product as a lone call would
// compute it (integer path: activations quantized by the scalar quantize_row).
float one_dot(TensorType t, const uint8_t* row, const float* x, size_t cols) {
  if (has_quantized_dot(t)) {
    const auto xq = quantize(activation_type(t), x, cols);
    return vec_dot(t, row, xq.data(), cols);
  }
  std::vector<float> w(cols);
  dequantize_row(t, row, w.data(), cols);
  return dot_f32(w.data(), x, cols);
}

TEST(Matmul, EveryOutputEqualsItsOwnDotForEveryTypeShapeAndThreadCount) {
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                              TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4};
  const size_t cols = 512;
  for (const TensorType t : types) {
    for (const int rows : {1, 5, 37, 100, 259}) {
      const auto values = random_floats(size_t(rows) * cols, uint32_t(rows));
      const size_t rb = row_bytes(t, cols);
      std::vector<uint8_t> bytes(rb * size_t(rows));
      for (int r = 0; r < rows; ++r)
        quantize_row(t, values.data() + size_t(r) * cols, bytes.data() + size_t(r) * rb, cols);
      std::vector<uint8_t> packed = bytes;
      Matrix w{"w", t, rows, int(cols), rb, bytes.data()};
      Matrix in_panels = w;
      if (has_panels(t)) {
        in_panels.data = packed.data();
        in_panels.panel_rows = pack_panels(t, packed.data(), rb, rows);
      }
      for (const Matrix* m : {&w, &in_panels}) {
        for (const int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          // 8 and 13: the 8-token tiles and one token group; 37: several token
          // groups, and several token blocks of the float kernel.
          for (const int n_tokens : {1, 2, 7, 8, 13, 37}) {
            const auto x = random_floats(size_t(n_tokens) * cols, 99);
            std::vector<float> y(size_t(n_tokens) * size_t(rows), -1.0f);
            matmul(*m, x.data(), n_tokens, y.data(), pool);
            for (int k = 0; k < n_tokens; ++k)
              for (int r = 0; r < rows; ++r) {
                const float want = one_dot(t, w.row(r), x.data() + size_t(k) * cols, cols);
                ASSERT_EQ(y[size_t(k) * size_t(rows) + size_t(r)], want)
                    << tensor_type_name(t) << " rows " << rows << " panel rows " << m->panel_rows << " threads "
                    << threads << " tokens " << n_tokens << " token " << k << " row " << r;
              }
          }
        }
      }
    }
  }
}

// Packed matrices on every SIMD target the CPU runs: the AVX-512 VNNI
// kernels, the AVX2 ones (legacy formats) and the scalar reference, through
// matmul's walks (decode's side-by-side streams with their leftovers, token
// passes), bit for bit equal to one dot per output.
TEST(Matmul, PackedMatricesOnEverySimdTarget) {
  const size_t cols = 256;
  for (const TensorType t :
       {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4}) {
    const int rows = 7 * kPanelRows + 5;
    const auto values = random_floats(size_t(rows) * cols, 11);
    const size_t rb = row_bytes(t, cols);
    std::vector<uint8_t> bytes(rb * size_t(rows));
    for (int r = 0; r < rows; ++r)
      quantize_row(t, values.data() + size_t(r) * cols, bytes.data() + size_t(r) * rb, cols);
    const Matrix rows_w{"w", t, rows, int(cols), rb, bytes.data()};
    std::vector<uint8_t> packed = bytes;
    Matrix w = rows_w;
    w.data = packed.data();
    w.panel_rows = pack_panels(t, packed.data(), rb, rows);
    testing::for_each_simd_target([&](int64_t) {
      for (const int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (const int n_tokens : {1, 3, 9}) {
          const auto x = random_floats(size_t(n_tokens) * cols, 5);
          std::vector<float> y(size_t(n_tokens) * size_t(rows), -1.0f);
          matmul(w, x.data(), n_tokens, y.data(), pool);
          for (int k = 0; k < n_tokens; ++k)
            for (int r = 0; r < rows; ++r)
              ASSERT_EQ(y[size_t(k) * size_t(rows) + size_t(r)],
                        one_dot(t, rows_w.row(r), x.data() + size_t(k) * cols, cols))
                  << tensor_type_name(t) << " threads " << threads << " tokens " << n_tokens << " token " << k
                  << " row " << r;
        }
      }
    });
  }
}

// No tokens: nothing computed, nothing written, no crash, on every path.
TEST(Matmul, NoTokensIsANoOp) {
  const size_t cols = 64;
  for (const TensorType t : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_K})
    for (const bool pack : {false, true}) {
      const size_t c = t == TensorType::Q4_K ? 256 : cols, rb = row_bytes(t, c);
      std::vector<uint8_t> bytes(rb * 16, 0);
      Matrix w{"w", t, 16, int(c), rb, bytes.data()};
      if (pack && has_panels(t)) w.panel_rows = pack_panels(t, bytes.data(), rb, 16);
      ThreadPool pool(2);
      float x = 0, y = -1;
      matmul(w, &x, 0, &y, pool);
      matmul({{w, &y}, {w, &y}}, &x, 0, pool);
      EXPECT_EQ(y, -1.0f);
    }
}

// Matrices on one input (Q/K/V, gate/up) in one call: every output the same
// as a call of its own, packed or not (37 rows: a tail past the panels), of
// one type or of types that quantize the input alike (Q4_K_M's Q4_K and Q6_K
// Q/K/V; the legacy formats), whose panels then share decode steps.
TEST(Matmul, SharedInputGivesWhatSeparateCallsGive) {
  const size_t cols = 512;
  using Q = TensorType;
  const std::array<TensorType, 3> type_sets[] = {{Q::Q8_0, Q::Q8_0, Q::Q8_0}, {Q::Q4_K, Q::Q4_K, Q::Q4_K},
                                                 {Q::F16, Q::F16, Q::F16},    {Q::Q4_K, Q::Q4_K, Q::Q6_K},
                                                 {Q::Q6_K, Q::Q4_K, Q::Q6_K}, {Q::Q8_0, Q::Q4_0, Q::Q5_0}};
  for (const auto& types : type_sets)
    for (const bool pack : {true, false}) {
      std::vector<std::vector<uint8_t>> bytes;
      std::vector<Matrix> ws;
      for (const int rows : {64, 37, 48}) {
        const TensorType t = types[ws.size()];  // this matrix's
        const auto values = random_floats(size_t(rows) * cols, uint32_t(rows) + 7);
        const size_t rb = row_bytes(t, cols);
        bytes.emplace_back(rb * size_t(rows));
        for (int r = 0; r < rows; ++r)
          quantize_row(t, values.data() + size_t(r) * cols, bytes.back().data() + size_t(r) * rb, cols);
        Matrix w{"w", t, rows, int(cols), rb, bytes.back().data()};
        if (pack && has_panels(t)) w.panel_rows = pack_panels(t, bytes.back().data(), rb, rows);
        ws.push_back(w);
      }
      ThreadPool pool(2);
      for (const int n_tokens : {1, 5, 13}) {
        const auto x = random_floats(size_t(n_tokens) * cols, 3);
        std::vector<std::vector<float>> together(3), alone(3);
        for (size_t i = 0; i < 3; ++i) {
          together[i].assign(size_t(n_tokens) * size_t(ws[i].rows), -1.0f);
          alone[i].assign(together[i].size(), -2.0f);
          matmul(ws[i], x.data(), n_tokens, alone[i].data(), pool);
        }
        matmul({{ws[0], together[0].data()}, {ws[1], together[1].data()}, {ws[2], together[2].data()}}, x.data(),
               n_tokens, pool);
        for (size_t i = 0; i < 3; ++i)
          EXPECT_EQ(together[i], alone[i]) << tensor_type_name(types[i]) << " (with " << tensor_type_name(types[0])
                                           << ") packed " << pack << " tokens " << n_tokens << " matrix " << i;
      }
    }
}

}  // namespace
}  // namespace pagoda
