// A GGUF metadata value: one of the format's scalar types, a string, or an
// array of values (arrays may nest). Integers keep their declared type so a
// file can be written back exactly as it was read.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace pagoda {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

const char* value_type_name(ValueType t);

class Value {
 public:
  Value() = default;
  static Value u8(uint8_t v) { return Value(ValueType::U8, uint64_t(v)); }
  static Value i8(int8_t v) { return Value(ValueType::I8, int64_t(v)); }
  static Value u16(uint16_t v) { return Value(ValueType::U16, uint64_t(v)); }
  static Value i16(int16_t v) { return Value(ValueType::I16, int64_t(v)); }
  static Value u32(uint32_t v) { return Value(ValueType::U32, uint64_t(v)); }
  static Value i32(int32_t v) { return Value(ValueType::I32, int64_t(v)); }
  static Value u64(uint64_t v) { return Value(ValueType::U64, v); }
  static Value i64(int64_t v) { return Value(ValueType::I64, v); }
  static Value f32(float v) { return Value(ValueType::F32, double(v)); }
  static Value f64(double v) { return Value(ValueType::F64, v); }
  static Value boolean(bool v) { return Value(ValueType::BOOL, v); }
  static Value string(std::string v) { return Value(ValueType::STRING, std::move(v)); }
  // An array whose elements all have type elem (checked by the writer).
  static Value array(ValueType elem, std::vector<Value> items);
  static Value strings(const std::vector<std::string>& items);
  static Value f32s(const std::vector<float>& items);
  static Value i32s(const std::vector<int32_t>& items);

  ValueType type() const { return type_; }
  ValueType elem_type() const { return elem_type_; }  // arrays only
  bool is_integer() const;
  bool is_number() const;

  // Typed reads; each throws FormatError if the value has another type or
  // does not fit (a negative number read as unsigned, say). `what` names the
  // value in the message.
  uint64_t as_u64(const std::string& what) const;
  int64_t as_i64(const std::string& what) const;
  double as_f64(const std::string& what) const;
  bool as_bool(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
  const std::vector<Value>& as_array(const std::string& what) const;

  // Short human-readable rendering (long arrays abbreviated), for `pagoda info`.
  std::string to_display(size_t max_items = 8) const;

 private:
  using Storage = std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string, std::vector<Value>>;
  Value(ValueType t, Storage s) : type_(t), storage_(std::move(s)) {}

  ValueType type_ = ValueType::U8;
  ValueType elem_type_ = ValueType::U8;
  Storage storage_;
};

}  // namespace pagoda
