#include "quant/rows.h"

#include <cmath>
#include <cstring>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {

bool weight_type_supported(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0;
}

size_t row_bytes(TensorType t, size_t n) {
  const auto info = tensor_type_info(uint32_t(t));
  if (!info) fail<Unsupported>("unknown tensor type {}", uint32_t(t));
  return n / info->block_elems * info->block_bytes;
}

void dequantize_row(TensorType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
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
    case TensorType::Q8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (size_t i = 0; i < n / BlockQ8_0::kElems; ++i) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < BlockQ8_0::kElems; ++j) dst[i * BlockQ8_0::kElems + j] = d * float(b[i].qs[j]);
      }
      return;
    }
    default:
      fail<Unsupported>("unsupported tensor type {}", tensor_type_name(t));
  }
}

void quantize_row(TensorType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
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
    case TensorType::Q8_0: {
      if (n % BlockQ8_0::kElems) fail<InvalidArgument>("Q8_0 row length {} is not a multiple of 32", n);
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (size_t i = 0; i < n / BlockQ8_0::kElems; ++i) {
        const float* x = src + i * BlockQ8_0::kElems;
        float amax = 0;
        for (int j = 0; j < BlockQ8_0::kElems; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        for (int j = 0; j < BlockQ8_0::kElems; ++j) b[i].qs[j] = int8_t(std::lround(x[j] * id));
      }
      return;
    }
    default:
      fail<Unsupported>("cannot quantize to {}", tensor_type_name(t));
  }
}

std::vector<uint8_t> quantize(TensorType t, const float* src, size_t n) {
  std::vector<uint8_t> out(row_bytes(t, n));
  quantize_row(t, src, out.data(), n);
  return out;
}

float dot_f32(const float* a, const float* b, size_t n) {
  // Eight independent partial sums: lets the compiler vectorize and keeps the
  // summation order fixed, so a result never depends on how work is split.
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace pagoda
