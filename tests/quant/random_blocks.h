// Random quantized weight blocks for the dot tests and benchmarks: arbitrary
// bytes (every code, sub-block scale and min a format can hold) with each
// block's F16 scales (d, and dmin for Q4_K) replaced by sane finite values,
// since random F16 bits would often be Inf or NaN.
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

// n elements (a multiple of the block size) of type t (Q4_0, Q5_0, Q8_0,
// Q4_K or Q6_K). Scales are positive, between 2^-7 / 1000 and 1.
inline std::vector<uint8_t> random_blocks(TensorType t, size_t n, std::mt19937& rng) {
  size_t d_offset = 0;  // where each block's F16 d lies; Q4_K's dmin follows it
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::Q4_K: break;
    case TensorType::Q6_K: d_offset = offsetof(BlockQ6_K, d); break;
    default: fail<InvalidArgument>("random_blocks: no F16 scale layout for {}", tensor_type_name(t));
  }
  std::vector<uint8_t> w(row_bytes(t, n));
  for (auto& b : w) b = uint8_t(rng());
  const size_t nb = n / block_elems(t), bb = row_bytes(t, block_elems(t));
  for (size_t b = 0; b < nb; ++b) {
    uint8_t* blk = w.data() + b * bb;
    const auto scale = [&] { return f32_to_f16(std::ldexp(float(rng() % 1000 + 1) / 1000.0f, -int(rng() % 8))); };
    // Two draws per block whatever the type, so every type consumes the stream alike.
    const uint16_t d = scale(), dmin = scale();
    std::memcpy(blk + d_offset, &d, 2);
    if (t == TensorType::Q4_K) std::memcpy(blk + offsetof(BlockQ4_K, dmin), &dmin, 2);
  }
  return w;
}

}  // namespace pagoda::testing
