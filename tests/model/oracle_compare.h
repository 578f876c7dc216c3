// Pagoda's forward pass against llama.cpp (testing/llama_oracle.h) on one
// GGUF file: both decode greedily from the same prompt, and they must pick
// the same tokens with the same log-probabilities, within a tolerance.
//
// The rule, per generated position:
//  1. Each of llama.cpp's top_k tokens has, in Pagoda, a logprob within
//     tol.at(its llama.cpp logprob) of llama.cpp's.
//  2. The argmax is the same; then both continue with it.
//  3. A different argmax is a near tie, not a failure, when Pagoda's argmax
//     is among llama.cpp's top_k: rule 1 then bounds llama.cpp's gap between
//     the two tokens by the sum of their tolerances, so the two computations
//     disagree only on the order of two values that are equal within
//     tolerance. The sequences then continue differently, so the comparison
//     stops there (the positions before it are compared in full). A
//     Pagoda argmax outside llama.cpp's top_k is a failure.
//  4. A mixture of experts may route a token to another expert where two of
//     its router logits are within rounding: when a position differs beyond
//     tolerance after Pagoda's router saw a gap under tol.abs (at this
//     position or an earlier one), it is a near tie too, and the comparison
//     stops there. F32's tol.abs (1e-4) leaves that to the quantized files.
//
// The architecture tests call expect_matches_llama_cpp for every
// architecture and file type; the tolerances are calibrated in
// tests/model/llama_cpp_oracle_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::testing {

// |Pagoda's logprob - llama.cpp's| <= abs + rel * |llama.cpp's logprob|, in nats:
// the relative part lets unlikely tokens (whose logprobs sum more error) differ more.
struct OracleTolerance {
  double abs = 1e-3;
  double rel = 0;
  double at(double logprob) const { return abs + rel * std::fabs(logprob); }
};

// The calibrated tolerances (measurements in tests/model/llama_cpp_oracle_test.cpp):
// F32 files; F16 and BF16 (libllama rounds their activations to 16 bits, Pagoda
// does not); every quantized type (both quantize activations to 8 bits).
inline constexpr OracleTolerance kF32Tol{1e-4, 1e-5};
// F32 files of GeGLU models (gemma2/3): ggml's CPU GELU reads a table of F16
// inputs, rounding each activation to 11 bits where Pagoda computes tanh in
// F32. Measured worst over the 4 seeds of each: 0.0008 nats at -12 (gemma2,
// soft-capped), 0.0014 at -122 (gemma3).
inline constexpr OracleTolerance kF32GeluTol{2e-3, 5e-5};
// gemma4's F32 files pass that table 12 times a token (6 GeGLU layers and 6
// per-layer-input GELUs) where gemma3's pass it twice: measured worst 0.0062
// nats at -12.4 over the 4 seeds, half of this.
inline constexpr OracleTolerance kF32Gelu12Tol{1e-2, 2e-4};
// F16 widened from llama/qwen2's calibration for the other eight architectures:
// worst 0.015 nats at -4.9 (glm4: sandwich norms and biases carry more of the
// rounding into the logits).
inline constexpr OracleTolerance kF16Tol{1e-2, 3e-3};
inline constexpr OracleTolerance kBF16Tol{0.05, 0.015};
inline constexpr OracleTolerance kQuantTol{0.1, 0.05};
// Files of 2-4 bits a weight (Q3_K_M, Q2_K, IQ4_XS, IQ4_NL) on the architectures
// whose norms carry more of an activation's 8-bit rounding into the logits
// (smollm3's 4 layers, olmo2's post-norms, glm4's sandwich): worst measured
// 0.64 nats at -9.1 (smollm3, Q3_K_M), 0.26 at -2.5 (glm4, IQ4_XS), 0.17 at
// -0.8 (glm4, Q2_K), 1.15-1.2x kQuantTol. Both read the same weights (the
// formats decode as ggml's to_float, bit for bit), so the gap is the
// activations' rounding, amplified.
inline constexpr OracleTolerance kLowBitTol{0.2, 0.08};
// Quantized files of hybrid models (qwen35, qwen35moe): Gated DeltaNet layers
// carry the activations' 8-bit rounding on through their state (and
// L2-normalize it). Measured worst 1.33 nats at -27 (qwen35 Q5_1 pure, tied
// seed 3): 1.24x kQuantTol, 0.59x this; F32 stays at 2-12% of kF32Tol. The
// absolute part stays kQuantTol's: it is also rule 4's routing near-tie bound.
inline constexpr OracleTolerance kRecurrentQuantTol{0.1, 0.08};

struct OracleReport {
  std::vector<std::string> failures;  // empty: the two match
  int steps_compared = 0;             // positions whose top_k logprobs were compared
  int tie_at = -1;                    // the position of a near-tie divergence (rule 3), or -1
  double worst_diff = 0;              // largest |logprob difference| seen, nats
  double worst_ratio = 0;             // largest difference / its tolerance (> 1: a failure)
  std::vector<int32_t> tokens;        // llama.cpp's greedy tokens
  // Every (llama.cpp logprob, |difference|) compared, for calibration.
  std::vector<std::pair<float, float>> samples;
};

struct OracleOptions {
  int n_new = 8;    // greedy positions
  int top_k = 10;   // llama.cpp's top tokens compared at each position
  int threads = 2;  // Pagoda's thread pool
};

// Compares, without failing the running test: llama.cpp runs `llama_path`,
// Pagoda runs `pagoda_path` (the same path, except in the negative checks,
// which give Pagoda a deliberately different model).
OracleReport compare_with_llama_cpp(const std::string& llama_path, const std::string& pagoda_path,
                                    std::span<const int32_t> prompt, OracleTolerance tol, OracleOptions opt = {});

// The check the tests run: ADD_FAILURE for each failure, and the worst
// difference recorded as a test property ("oracle_worst_diff <label>").
// Returns the report for further checks.
OracleReport expect_matches_llama_cpp(const std::string& path, std::span<const int32_t> prompt, OracleTolerance tol,
                                      OracleOptions opt = {}, const std::string& label = "");

}  // namespace pagoda::testing
