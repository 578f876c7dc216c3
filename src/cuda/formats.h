// The weight types the CUDA kernels decode (F32, F16, BF16, Q8_0, Q4_0, Q5_0,
// Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, IQ4_XS, Q6_K)
// and their row layout. Plain C++: the host half asks before it uploads a
// tensor, so an unsupported type is refused at load, not at a launch.
#pragma once

#include <cstddef>
#include <optional>

#include "gguf/types.h"

namespace pagoda::cuda {

struct WeightLayout {
  int block_elems;  // elements per block (1 for F32 and F16)
  int block_bytes;  // bytes per block
};

// The layout of t, or nullopt when no kernel here decodes it.
std::optional<WeightLayout> weight_layout(TensorType t);

inline bool weight_type_supported(TensorType t) { return weight_layout(t).has_value(); }

// Bytes of one row of k elements of t; 0 when t is unsupported or k is not a
// positive multiple of its block size (every launcher answers that with
// cudaErrorInvalidValue).
size_t weight_row_bytes(TensorType t, long long k);

}  // namespace pagoda::cuda
