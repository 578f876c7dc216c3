#include "quant/rows.h"

#include <cstring>

#include "quant/dot.h"
#include "quant/formats.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {

bool weight_type_supported(TensorType t) {
  // The float types, and every quantized type matmul has a dot kernel for.
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || has_quantized_dot(t);
}

std::string supported_weight_types() {
  std::string names;
  for (uint32_t id = 0; id < 64; ++id)
    if (const auto info = tensor_type_info(id); info && weight_type_supported(TensorType(id)))
      names += (names.empty() ? "" : ", ") + std::string(info->name);
  return names;
}

size_t block_elems(TensorType t) {
  const auto info = tensor_type_info(uint32_t(t));
  if (!info) fail<Unsupported>("unknown tensor type {}", uint32_t(t));
  return info->block_elems;
}

size_t row_bytes(TensorType t, size_t n) {
  const auto info = tensor_type_info(uint32_t(t));
  if (!info) fail<Unsupported>("unknown tensor type {}", uint32_t(t));
  if (n % info->block_elems)
    fail<InvalidArgument>("{} row length {} is not a multiple of {}", info->name, n, info->block_elems);
  return n / info->block_elems * info->block_bytes;
}

void dequantize_row(TensorType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case TensorType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case TensorType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case TensorType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case TensorType::Q8_0: return dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
    case TensorType::Q4_0: return dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
    case TensorType::Q5_0: return dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n);
    case TensorType::Q5_1: return dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n);
    case TensorType::IQ4_NL: return dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n);
    case TensorType::MXFP4: return dequantize_row_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n);
    case TensorType::Q2_K: return dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n);
    case TensorType::Q3_K: return dequantize_row_q3_k(static_cast<const BlockQ3_K*>(src), dst, n);
    case TensorType::Q4_K: return dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
    case TensorType::Q5_K: return dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n);
    case TensorType::IQ4_XS: return dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n);
    case TensorType::Q6_K: return dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
    case TensorType::Q8_K: return dequantize_row_q8_k(static_cast<const BlockQ8_K*>(src), dst, n);
    default: fail<Unsupported>("unsupported tensor type {}", tensor_type_name(t));
  }
}

void quantize_row(TensorType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case TensorType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case TensorType::F16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
      return;
    }
    case TensorType::BF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS:
    case TensorType::Q8_K: break;
    default: fail<Unsupported>("cannot quantize to {}", tensor_type_name(t));
  }
  row_bytes(t, n);  // checks n is whole blocks
  switch (t) {
    case TensorType::Q8_0: return quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
    case TensorType::Q4_0: return quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n);
    case TensorType::Q5_0: return quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n);
    case TensorType::Q5_1: return quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n);
    case TensorType::IQ4_NL: return quantize_row_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n);
    case TensorType::MXFP4: return quantize_row_mxfp4(src, static_cast<BlockMXFP4*>(dst), n);
    case TensorType::Q2_K: return quantize_row_q2_k(src, static_cast<BlockQ2_K*>(dst), n);
    case TensorType::Q3_K: return quantize_row_q3_k(src, static_cast<BlockQ3_K*>(dst), n);
    case TensorType::Q4_K: return quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n);
    case TensorType::Q5_K: return quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n);
    case TensorType::IQ4_XS: return quantize_row_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n);
    case TensorType::Q6_K: return quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n);
    default: return quantize_row_q8_k(src, static_cast<BlockQ8_K*>(dst), n);
  }
}

std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n) {
  std::vector<uint8_t> out(row_bytes(t, n));
  quantize_row(t, src, out.data(), n);
  return out;
}

}  // namespace pagoda
