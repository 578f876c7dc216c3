// Random quantized weight blocks for the dot tests and benchmarks: arbitrary
// bytes (every code, sub-block scale and min a format can hold) with each
// block's F16 scales (d, and dmin or m where the format has one) replaced by
// sane finite values, since random F16 bits would often be Inf or NaN, and
// MXFP4's exponent byte by a moderate one (a random one would often take the
// dot products past the largest float).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/types.h"
#include "quant/blocks.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda::testing {

// Where the F16 fields of a block of t lie (its scale d first, then dmin or
// Q5_1's m): every other byte may hold anything.
inline std::vector<size_t> half_fields(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS: return {0};
    case TensorType::MXFP4: return {};
    case TensorType::Q5_1: return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case TensorType::Q4_K: return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case TensorType::Q5_K: return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case TensorType::Q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case TensorType::Q3_K: return {offsetof(BlockQ3_K, d)};
    case TensorType::Q6_K: return {offsetof(BlockQ6_K, d)};
    default: fail<InvalidArgument>("random_blocks: no F16 scale layout for {}", tensor_type_name(t));
  }
}

// Where a block of t keeps an E8M0 scale byte (MXFP4's e).
inline std::vector<size_t> e8m0_fields(TensorType t) {
  return t == TensorType::MXFP4 ? std::vector<size_t>{offsetof(BlockMXFP4, e)} : std::vector<size_t>{};
}

// n elements (a multiple of the block size) of type t (a quantized weight
// type). Scales are positive, between 2^-7 / 1000 and 1 (MXFP4's halved
// scale 2^(e - 128) between 2^-17 and 2^-1).
inline std::vector<uint8_t> random_blocks(TensorType t, size_t n, std::mt19937& rng) {
  const std::vector<size_t> halves = half_fields(t);
  std::vector<uint8_t> w(row_bytes(t, n));
  for (auto& b : w) b = uint8_t(rng());
  const size_t nb = n / block_elems(t), bb = row_bytes(t, block_elems(t));
  for (size_t b = 0; b < nb; ++b) {
    uint8_t* blk = w.data() + b * bb;
    const auto scale = [&] { return f32_to_f16(std::ldexp(float(rng() % 1000 + 1) / 1000.0f, -int(rng() % 8))); };
    // Two draws per block whatever the type, so every type consumes the stream alike.
    const uint16_t draws[2] = {scale(), scale()};
    for (size_t i = 0; i < halves.size(); ++i) std::memcpy(blk + halves[i], &draws[i], 2);
    for (size_t at : e8m0_fields(t)) blk[at] = uint8_t(127 - draws[0] % 17);
  }
  return w;
}

}  // namespace pagoda::testing
