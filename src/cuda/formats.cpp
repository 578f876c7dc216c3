#include "cuda/formats.h"

#include "quant/blocks.h"

namespace pagoda::cuda {

std::optional<WeightLayout> weight_layout(TensorType t) {
  switch (t) {
    case TensorType::F32: return WeightLayout{1, 4};
    case TensorType::F16: return WeightLayout{1, 2};
    case TensorType::BF16: return WeightLayout{1, 2};
    case TensorType::Q8_0: return WeightLayout{kQK, int(sizeof(BlockQ8_0))};
    case TensorType::Q4_0: return WeightLayout{kQK, int(sizeof(BlockQ4_0))};
    case TensorType::Q5_0: return WeightLayout{kQK, int(sizeof(BlockQ5_0))};
    case TensorType::Q5_1: return WeightLayout{kQK, int(sizeof(BlockQ5_1))};
    case TensorType::IQ4_NL: return WeightLayout{kQK, int(sizeof(BlockIQ4_NL))};
    case TensorType::MXFP4: return WeightLayout{kQK, int(sizeof(BlockMXFP4))};
    case TensorType::Q2_K: return WeightLayout{kQKK, int(sizeof(BlockQ2_K))};
    case TensorType::Q3_K: return WeightLayout{kQKK, int(sizeof(BlockQ3_K))};
    case TensorType::Q4_K: return WeightLayout{kQKK, int(sizeof(BlockQ4_K))};
    case TensorType::Q5_K: return WeightLayout{kQKK, int(sizeof(BlockQ5_K))};
    case TensorType::IQ4_XS: return WeightLayout{kQKK, int(sizeof(BlockIQ4_XS))};
    case TensorType::Q6_K: return WeightLayout{kQKK, int(sizeof(BlockQ6_K))};
    default: return std::nullopt;
  }
}

size_t weight_row_bytes(TensorType t, long long k) {
  const auto layout = weight_layout(t);
  if (!layout || k <= 0 || k % layout->block_elems != 0) return 0;
  return size_t(k / layout->block_elems) * size_t(layout->block_bytes);
}

}  // namespace pagoda::cuda
