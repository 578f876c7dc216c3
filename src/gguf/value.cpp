#include "gguf/value.h"

#include <limits>

#include "util/error.h"

namespace pagoda {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "uint8";
    case ValueType::I8: return "int8";
    case ValueType::U16: return "uint16";
    case ValueType::I16: return "int16";
    case ValueType::U32: return "uint32";
    case ValueType::I32: return "int32";
    case ValueType::F32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "uint64";
    case ValueType::I64: return "int64";
    case ValueType::F64: return "float64";
  }
  return "unknown";
}

Value Value::array(ValueType elem, std::vector<Value> items) {
  Value v(ValueType::ARRAY, std::move(items));
  v.elem_type_ = elem;
  return v;
}

Value Value::strings(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(string(s));
  return array(ValueType::STRING, std::move(v));
}

Value Value::f32s(const std::vector<float>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(f32(f));
  return array(ValueType::F32, std::move(v));
}

Value Value::i32s(const std::vector<int32_t>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (int32_t i : items) v.push_back(i32(i));
  return array(ValueType::I32, std::move(v));
}

bool Value::is_integer() const {
  return std::holds_alternative<uint64_t>(storage_) || std::holds_alternative<int64_t>(storage_);
}
bool Value::is_number() const { return is_integer() || std::holds_alternative<double>(storage_); }

uint64_t Value::as_u64(const std::string& what) const {
  if (auto* u = std::get_if<uint64_t>(&storage_)) return *u;
  if (auto* i = std::get_if<int64_t>(&storage_)) {
    if (*i < 0) fail<FormatError>("{}: expected a non-negative integer, got {}", what, *i);
    return uint64_t(*i);
  }
  fail<FormatError>("{}: expected an integer, got {}", what, value_type_name(type_));
}

int64_t Value::as_i64(const std::string& what) const {
  if (auto* i = std::get_if<int64_t>(&storage_)) return *i;
  if (auto* u = std::get_if<uint64_t>(&storage_)) {
    if (*u > uint64_t(std::numeric_limits<int64_t>::max())) fail<FormatError>("{}: integer {} too large", what, *u);
    return int64_t(*u);
  }
  fail<FormatError>("{}: expected an integer, got {}", what, value_type_name(type_));
}

double Value::as_f64(const std::string& what) const {
  if (auto* d = std::get_if<double>(&storage_)) return *d;
  if (auto* u = std::get_if<uint64_t>(&storage_)) return double(*u);
  if (auto* i = std::get_if<int64_t>(&storage_)) return double(*i);
  fail<FormatError>("{}: expected a number, got {}", what, value_type_name(type_));
}

bool Value::as_bool(const std::string& what) const {
  if (auto* b = std::get_if<bool>(&storage_)) return *b;
  fail<FormatError>("{}: expected a bool, got {}", what, value_type_name(type_));
}

const std::string& Value::as_string(const std::string& what) const {
  if (auto* s = std::get_if<std::string>(&storage_)) return *s;
  fail<FormatError>("{}: expected a string, got {}", what, value_type_name(type_));
}

const std::vector<Value>& Value::as_array(const std::string& what) const {
  if (auto* a = std::get_if<std::vector<Value>>(&storage_)) return *a;
  fail<FormatError>("{}: expected an array, got {}", what, value_type_name(type_));
}

std::string Value::to_display(size_t max_items) const {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "?";
        } else if constexpr (std::is_same_v<T, std::string>) {
          std::string s = x.size() > 60 ? x.substr(0, 60) + "..." : x;
          for (char& c : s)
            if (c == '\n') c = ' ';
          return "\"" + s + "\"";
        } else if constexpr (std::is_same_v<T, std::vector<Value>>) {
          std::string s = fmt::format("[{} x {}: ", x.size(), value_type_name(elem_type_));
          for (size_t i = 0; i < x.size() && i < max_items; ++i) s += (i ? ", " : "") + x[i].to_display(max_items);
          return s + (x.size() > max_items ? ", ...]" : "]");
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else {
          return fmt::format("{}", x);
        }
      },
      storage_);
}

}  // namespace pagoda
