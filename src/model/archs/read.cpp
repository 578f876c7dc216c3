#include <fmt/format.h>

#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

std::string arch_key(const ModelConfig& c, std::string_view key) { return fmt::format("{}.{}", c.arch, key); }

double read_f64(const GgufFile& f, const ModelConfig& c, std::string_view key, double dflt) {
  const double v = f.get_f64(arch_key(c, key), dflt);
  if (!std::isfinite(v)) fail<FormatError>("{}: {} = {} is not a finite number", f.source(), arch_key(c, key), v);
  return v;
}

uint64_t read_u64(const GgufFile& f, const ModelConfig& c, std::string_view key, uint64_t dflt) {
  return f.get_u64(arch_key(c, key), dflt);
}

std::vector<bool> sliding_layers(const GgufFile& f, const ModelConfig& c, uint64_t default_period) {
  const std::string key = arch_key(c, "attention.sliding_window_pattern");
  std::vector<bool> sliding(size_t(c.n_layer));
  const Value* v = f.find(key);
  if (v && v->type() == ValueType::ARRAY) {
    const auto& items = v->as_array(key);
    if (items.size() != size_t(c.n_layer))
      fail<FormatError>("{}: {} has {} entries for {} layers", f.source(), key, items.size(), c.n_layer);
    for (size_t l = 0; l < items.size(); ++l) sliding[l] = items[l].as_bool(key);
    return sliding;
  }
  const uint64_t period = v ? v->as_u64(key) : default_period;  // any period is meaningful: no range to check
  // llama.cpp's rule: a period of 0 makes every layer sliding; else the last of each period is global.
  for (size_t l = 0; l < sliding.size(); ++l) sliding[l] = period == 0 || l % period < period - 1;
  return sliding;
}

}  // namespace pagoda
