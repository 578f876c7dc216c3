#include "server/json_fields.h"

#include <cmath>

#include "server/api_error.h"

namespace pagoda::server {

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> opt_number(const json& body, const char* name) {
  const json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_number()) bad_request(name, "'{}' must be a number, got {}", name, f->type_name());
  return f->get<double>();
}

std::optional<int64_t> opt_integer(const json& body, const char* name) {
  const json* f = field(body, name);
  if (!f) return std::nullopt;
  if (f->is_number_unsigned()) {
    const uint64_t v = f->get<uint64_t>();
    if (v > uint64_t(INT64_MAX)) bad_request(name, "'{}' is too large", name);
    return int64_t(v);
  }
  if (f->is_number_integer()) return f->get<int64_t>();
  if (f->is_number_float()) {
    const double d = f->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) return int64_t(d);
  }
  bad_request(name, "'{}' must be an integer, got {}", name, f->is_number() ? "a fraction" : f->type_name());
}

std::optional<int32_t> opt_int32(const json& body, const char* name, int64_t lo, int64_t hi) {
  const auto v = opt_integer(body, name);
  if (!v) return std::nullopt;
  if (*v < lo || *v > hi) bad_request(name, "'{}' must be in [{}, {}], got {}", name, lo, hi, *v);
  return int32_t(*v);
}

std::optional<bool> opt_bool(const json& body, const char* name) {
  const json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_boolean()) bad_request(name, "'{}' must be a boolean, got {}", name, f->type_name());
  return f->get<bool>();
}

std::optional<std::string> opt_string(const json& body, const char* name) {
  const json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_string()) bad_request(name, "'{}' must be a string, got {}", name, f->type_name());
  return f->get<std::string>();
}

std::vector<std::string> opt_string_list(const json& body, const char* name) {
  const json* f = field(body, name);
  if (!f) return {};
  if (f->is_string()) return {f->get<std::string>()};
  if (!f->is_array()) bad_request(name, "'{}' must be a string or an array of strings", name);
  std::vector<std::string> out;
  for (const auto& s : *f) {
    if (!s.is_string()) bad_request(name, "'{}' must be a string or an array of strings", name);
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace pagoda::server
