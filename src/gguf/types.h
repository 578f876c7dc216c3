// The tensor element types of GGUF files (ggml's type ids) and their block
// layout: how many elements one block holds and how many bytes it takes.
// Arithmetic on the blocks lives in src/quant; this is only the layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,
};

struct TensorTypeInfo {
  std::string_view name;
  uint32_t block_elems;  // elements per block
  uint32_t block_bytes;  // bytes per block
};

// Layout of a known type id, or nullopt for ids Pagoda does not know at all.
std::optional<TensorTypeInfo> tensor_type_info(uint32_t id);
std::string_view tensor_type_name(TensorType t);
std::optional<TensorType> tensor_type_from_name(std::string_view name);  // "q8_0", "F16", ...

}  // namespace pagoda
