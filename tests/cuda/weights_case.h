// Weight matrices for the kernel tests (GPU and CPU runs): every type the
// kernels decode, random bytes in each format, and the CPU's decoding of them.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/formats.h"
#include "cuda_test_util.h"
#include "gguf/types.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"

namespace pagoda::cuda::testing {

inline const TensorType kWeightTypes[] = {TensorType::F32,   TensorType::F16,    TensorType::BF16, TensorType::Q8_0,
                                          TensorType::Q4_0,  TensorType::Q5_0,   TensorType::Q5_1, TensorType::IQ4_NL,
                                          TensorType::MXFP4, TensorType::Q2_K,   TensorType::Q3_K, TensorType::Q4_K,
                                          TensorType::Q5_K,  TensorType::IQ4_XS, TensorType::Q6_K};

// Rows that fill no warp or block evenly, and a row length of three blocks
// (101 elements for the float types, which have no block).
inline constexpr int64_t kRows = 37;
inline int64_t row_length(TensorType t) { return block_elems(t) == 1 ? 101 : 3 * int64_t(block_elems(t)); }

// n_rows rows of k random elements stored as t (every code and scale a block can hold).
inline std::vector<uint8_t> random_weights(TensorType t, int64_t n_rows, int64_t k, std::mt19937& rng) {
  if (block_elems(t) == 1) {  // F32, F16, BF16
    const std::vector<float> f = random_floats(size_t(n_rows * k), rng);
    return quantize(t, f.data(), f.size());
  }
  return pagoda::testing::random_blocks(t, size_t(n_rows * k), rng);
}

// The CPU's decoding of every row.
inline std::vector<float> decode_cpu(TensorType t, const std::vector<uint8_t>& w, int64_t n_rows, int64_t k) {
  std::vector<float> out(size_t(n_rows * k));
  const size_t rb = weight_row_bytes(t, k);
  for (int64_t r = 0; r < n_rows; ++r) dequantize_row(t, w.data() + r * rb, out.data() + r * k, size_t(k));
  return out;
}

// out [n_tokens][n_rows] against a double-precision dot of the CPU-decoded rows
// wf [n_rows][k] with x [n_tokens][k]. The kernel sums k F32 products in its own
// order; recursive summation errs by at most about k * 2^-24 of sum |w x| (and
// usually far less), so that is the bound.
inline void expect_matvec_matches(const std::vector<float>& wf, const std::vector<float>& x,
                                  const std::vector<float>& out, int n_tokens, int64_t n_rows, int64_t k) {
  for (int tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_rows; ++r) {
      double dot = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        dot += double(wf[r * k + i]) * x[tok * k + i];
        mag += std::abs(double(wf[r * k + i]) * x[tok * k + i]);
      }
      ASSERT_NEAR(out[tok * n_rows + r], dot, double(k) * 0x1p-24 * mag + 1e-30) << "token " << tok << " row " << r;
    }
}

}  // namespace pagoda::cuda::testing
