// The MMQ cases both runs share (mmq_emulation_test.cpp on the CPU,
// mmq_test.cpp on the GPU): the CPU's own quantization of the activations and
// its integer dot products (quant/dot.h's vec_dot_scalar), which the kernels
// must equal to the bit.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/formats.h"
#include "gguf/types.h"
#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/formats.h"
#include "util/half.h"

namespace pagoda::cuda::testing {

inline const TensorType kMmqTypes[] = {TensorType::Q8_0,   TensorType::Q4_0, TensorType::Q5_0, TensorType::IQ4_NL,
                                       TensorType::MXFP4,  TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                       TensorType::IQ4_XS, TensorType::Q6_K};
inline const int kMmqTokenCounts[] = {1, 9, 16, 33, 64};
// 70 rows: a full tile of 64 and a partial one whose last three warps hold no row.
inline constexpr int64_t kMmqRows = 70;
// 11 blocks (a step of 8 and a partial one) for the 32-element formats; 2 super-blocks for the others.
inline int64_t mmq_row_length(TensorType t) { return activation_type(t) == TensorType::Q8_K ? 2 * kQKK : 11 * kQK; }

// The CPU's activations for weights of type t, x [n_tokens][k]: as the kernel
// lays them out (codes [n_tokens][k] int8, a scale and a sum per 32), from
// quantize_row_q8_0 or quantize_row_q8_k, and the CPU's own blocks for its dots.
struct CpuActivations {
  std::vector<int8_t> codes;
  std::vector<float> scales;
  std::vector<int32_t> sums;
  std::vector<uint8_t> blocks;  // [n_tokens] rows of BlockQ8_0 or BlockQ8_K
  size_t row_bytes = 0;
};

inline CpuActivations cpu_activations(TensorType t, const std::vector<float>& x, int n_tokens, int64_t k) {
  CpuActivations a;
  const bool k_quant = activation_type(t) == TensorType::Q8_K;
  a.row_bytes = k_quant ? size_t(k / kQKK) * sizeof(BlockQ8_K) : size_t(k / kQK) * sizeof(BlockQ8_0);
  a.blocks.resize(a.row_bytes * size_t(n_tokens));
  for (int tok = 0; tok < n_tokens; ++tok) {
    uint8_t* row = a.blocks.data() + a.row_bytes * size_t(tok);
    for (int64_t b = 0; b < k / kQK; ++b) {
      const int8_t* qs;
      float d;
      if (k_quant) {
        BlockQ8_K blk;
        quantize_row_q8_k(x.data() + tok * k + (b / 8) * kQKK, &blk, kQKK);
        std::memcpy(row + size_t(b / 8) * sizeof(BlockQ8_K), &blk, sizeof blk);
        const auto& stored = *reinterpret_cast<const BlockQ8_K*>(row + size_t(b / 8) * sizeof(BlockQ8_K));
        qs = stored.qs + 32 * (b % 8);
        d = stored.d;
      } else {
        BlockQ8_0 blk;
        quantize_row_q8_0(x.data() + tok * k + b * kQK, &blk, kQK);
        std::memcpy(row + size_t(b) * sizeof(BlockQ8_0), &blk, sizeof blk);
        qs = reinterpret_cast<const BlockQ8_0*>(row)[b].qs;
        d = f16_to_f32(blk.d);
      }
      int32_t sum = 0;
      for (int i = 0; i < kQK; ++i) {
        a.codes.push_back(qs[i]);
        sum += qs[i];
      }
      a.scales.push_back(d);
      a.sums.push_back(sum);
    }
  }
  return a;
}

// The kernel's codes [n_tokens][k / 4] words as int8s.
inline std::vector<int8_t> unpack_codes(const std::vector<uint32_t>& words) {
  std::vector<int8_t> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// out [n_tokens][n_rows] exactly as the CPU's integer path gives it: the
// double loop over tokens and rows of vec_dot_scalar.
inline std::vector<float> cpu_integer_matmul(TensorType t, const std::vector<uint8_t>& w, int64_t n_rows, int64_t k,
                                             const CpuActivations& a, int n_tokens) {
  std::vector<float> out(size_t(n_tokens) * size_t(n_rows));
  const size_t rb = weight_row_bytes(t, k);
  for (int tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_rows; ++r)
      out[size_t(tok) * n_rows + r] =
          vec_dot_scalar(t, w.data() + rb * r, a.blocks.data() + a.row_bytes * size_t(tok), size_t(k));
  return out;
}

// out [n_tokens][n_rows] against the CPU's integer path `want` (the same
// terms, summed in another order): each order's roundings stay within
// (terms + 8) 2^-24 of the terms' magnitudes, bounded by sum |w x| with a
// quarter's room for the activations' rounding.
inline void expect_near_integer_path(const std::vector<float>& out, const std::vector<float>& want,
                                     const std::vector<float>& wf, const std::vector<float>& x, int n_tokens,
                                     int64_t n_rows, int64_t k) {
  ASSERT_EQ(out.size(), want.size());
  for (int tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_rows; ++r) {
      double mag = 0;
      for (int64_t i = 0; i < k; ++i)
        mag += std::abs(double(wf[size_t(r * k + i)])) * std::abs(double(x[size_t(tok * k + i)]));
      const size_t o = size_t(tok) * size_t(n_rows) + size_t(r);
      ASSERT_NEAR(out[o], want[o], 2 * double(k / 32 + 8) * 0x1p-24 * 1.25 * mag + 1e-30)
          << "token " << tok << " row " << r;
    }
}

// out [n_tokens][n_rows] against `ref`, the F16 path's result for the same
// weights (wf [n_rows][k], decoded) and x: they differ by the activations'
// 8-bit rounding, |x - d q| <= d / 2 per element plus up to 127 d 2^-11 where
// Q8_0's scale is stored in F16 (0.6 d in all), and by the F16 path's own
// roundings, 2^-10 of sum |w x| for its F16 operands and k 2^-23 for its sums.
inline void expect_near_f16_path(const std::vector<float>& out, const std::vector<double>& ref,
                                 const std::vector<float>& wf, const std::vector<float>& x, const CpuActivations& a,
                                 int n_tokens, int64_t n_rows, int64_t k) {
  for (int tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_rows; ++r) {
      double quant = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double wi = std::abs(double(wf[size_t(r * k + i)]));
        quant += wi * 0.6 * a.scales[size_t(tok * k + i) / 32];
        mag += wi * std::abs(double(x[size_t(tok * k + i)]));
      }
      const size_t o = size_t(tok) * size_t(n_rows) + size_t(r);
      ASSERT_NEAR(out[o], ref[o], quant + (0x1p-10 + double(k) * 0x1p-23) * mag + 1e-30)
          << "token " << tok << " row " << r;
    }
}

// The F16 path's exact result, in double: x and wf rounded to F16, multiplied, summed.
inline std::vector<double> f16_path_in_double(const std::vector<float>& wf, const std::vector<float>& x, int n_tokens,
                                              int64_t n_rows, int64_t k) {
  std::vector<double> out(size_t(n_tokens) * size_t(n_rows));
  for (int tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_rows; ++r) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += double(f16_to_f32(f32_to_f16(wf[size_t(r * k + i)]))) * f16_to_f32(f32_to_f16(x[size_t(tok * k + i)]));
      out[size_t(tok) * size_t(n_rows) + size_t(r)] = s;
    }
  return out;
}

// Bit equality, NaN included (an element the kernel forgot stays NaN).
inline void expect_same_floats(const std::vector<float>& got, const std::vector<float>& want, int64_t n_rows) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t g, e;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&e, &want[i], 4);
    ASSERT_EQ(g, e) << "token " << i / n_rows << " row " << i % n_rows << ": " << got[i] << " vs " << want[i];
  }
}

}  // namespace pagoda::cuda::testing
