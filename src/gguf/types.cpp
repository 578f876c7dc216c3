#include "gguf/types.h"

#include <array>
#include <cctype>
#include <string>

namespace pagoda {
namespace {

struct Known {
  TensorType type;
  TensorTypeInfo info;
};

constexpr std::array kKnown = {
    Known{TensorType::F32, {"F32", 1, 4}},           Known{TensorType::F16, {"F16", 1, 2}},
    Known{TensorType::BF16, {"BF16", 1, 2}},         Known{TensorType::Q4_0, {"Q4_0", 32, 18}},
    Known{TensorType::Q4_1, {"Q4_1", 32, 20}},       Known{TensorType::Q5_0, {"Q5_0", 32, 22}},
    Known{TensorType::Q5_1, {"Q5_1", 32, 24}},       Known{TensorType::Q8_0, {"Q8_0", 32, 34}},
    Known{TensorType::Q8_1, {"Q8_1", 32, 36}},       Known{TensorType::Q2_K, {"Q2_K", 256, 84}},
    Known{TensorType::Q3_K, {"Q3_K", 256, 110}},     Known{TensorType::Q4_K, {"Q4_K", 256, 144}},
    Known{TensorType::Q5_K, {"Q5_K", 256, 176}},     Known{TensorType::Q6_K, {"Q6_K", 256, 210}},
    Known{TensorType::Q8_K, {"Q8_K", 256, 292}},     Known{TensorType::IQ4_NL, {"IQ4_NL", 32, 18}},
    Known{TensorType::IQ4_XS, {"IQ4_XS", 256, 136}}, Known{TensorType::MXFP4, {"MXFP4", 32, 17}},
};

}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(uint32_t id) {
  for (const auto& k : kKnown)
    if (uint32_t(k.type) == id) return k.info;
  return std::nullopt;
}

std::string_view tensor_type_name(TensorType t) {
  auto info = tensor_type_info(uint32_t(t));
  return info ? info->name : "unknown";
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& k : kKnown)
    if (k.info.name == upper) return k.type;
  return std::nullopt;
}

}  // namespace pagoda
