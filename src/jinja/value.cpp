// Values: equality, truthiness, printing and JSON, the way @huggingface/jinja
// (JavaScript) does them, since its output is what templates are checked against.
#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/error.h"

namespace pagoda::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(std::string key, Value v) {
  for (auto& [k, old] : entries)
    if (k == key) {
      old = std::move(v);
      return;
    }
  entries.emplace_back(std::move(key), std::move(v));
}

const Value* Args::kwarg(std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

const Value* Args::get(size_t i, std::string_view name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

double Value::as_number() const {
  if (is_int()) return static_cast<double>(as_int());
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return as_float();
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::list: return std::get<std::shared_ptr<List>>(v_).get();
    case Kind::dict: return std::get<std::shared_ptr<Dict>>(v_).get();
    case Kind::callable: return std::get<std::shared_ptr<Callable>>(v_).get();
    default: return nullptr;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return as_bool();
    case Kind::integer: return as_int() != 0;
    case Kind::floating: return as_float() != 0.0 && !std::isnan(as_float());
    case Kind::string: return !str().empty();
    case Kind::list: return !list().empty();
    case Kind::dict: return dict_ref().is_namespace || !dict_ref().entries.empty();
    case Kind::callable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind()) {
    case Kind::undefined: return "undefined";
    case Kind::none: return "none";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "string";
    case Kind::list: return "list";
    case Kind::dict: return is_namespace() ? "namespace" : "dict";
    case Kind::callable: return "callable";
  }
  return "?";
}

std::string js_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return "0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int k = static_cast<int>(digits.size()), n = exp + 1;
  std::string out;
  if (k <= n && n <= 21) {
    out = digits + std::string(n - k, '0');
  } else if (0 < n && n <= 21) {
    out = digits.substr(0, n) + "." + digits.substr(n);
  } else if (-6 < n && n <= 0) {
    out = "0." + std::string(-n, '0') + digits;
  } else {
    out = digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0 ? "e+" : "e-") + std::to_string(std::abs(n - 1));
  }
  return sign + out;
}

std::string float_text(double d) {
  if (d == 0 && std::signbit(d)) return "-0.0";
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e21) return js_number(d) + ".0";
  return js_number(d);
}

std::string to_output(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return "";
    case Value::Kind::boolean: return v.as_bool() ? "true" : "false";
    case Value::Kind::integer: return std::to_string(v.as_int());
    case Value::Kind::floating: return float_text(v.as_float());
    case Value::Kind::string: return v.str();
    case Value::Kind::list:
    case Value::Kind::dict: return to_json(v, {}, false);
    case Value::Kind::callable: return "[function " + v.callable().name + "]";
  }
  return "";
}

std::string to_concat(const Value& v) {
  if (v.is_float()) return js_number(v.as_float());
  if (v.is_list()) {  // JavaScript's Array#toString: the items' texts joined with ","
    std::string out;
    for (size_t i = 0; i < v.list().size(); ++i) {
      const Value& item = v.list()[i];
      if (i) out += ',';
      out += item.is_none() || item.is_undefined() ? "undefined" : to_output(item);
    }
    return out;
  }
  if (v.is_dict()) return "[object Map]";
  return to_output(v);
}

namespace {

void append_utf16_escape(std::string& out, unsigned unit) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

// Decodes one UTF-8 sequence at s[i] (advancing i); invalid bytes decode as U+FFFD.
uint32_t decode_utf8(std::string_view s, size_t& i) {
  const unsigned char c = s[i];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
  for (int k = 1; k < len; ++k) {
    const unsigned char cc = s[i + k];
    if ((cc >> 6) != 2) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  i += len;
  return cp;
}

}  // namespace

std::string json_quote(std::string_view s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    if (c >= 0x80 && ensure_ascii) {
      const uint32_t cp = decode_utf8(s, i);
      if (cp >= 0x10000) {
        append_utf16_escape(out, 0xD800 + ((cp - 0x10000) >> 10));
        append_utf16_escape(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
      } else {
        append_utf16_escape(out, cp);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || (c == 0x7F && ensure_ascii))
          append_utf16_escape(out, c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string to_json(const Value& v, const JsonOptions& o, bool undefined_as_null, int depth) {
  if (depth > 512) throw LimitExceeded("tojson: value nested too deeply");
  std::string item_sep = o.indent > 0 ? "," : ", ", key_sep = ": ";
  if (o.separators) std::tie(item_sep, key_sep) = *o.separators;
  switch (v.kind()) {
    case Value::Kind::undefined: return undefined_as_null ? "null" : "undefined";
    case Value::Kind::none: return "null";
    case Value::Kind::boolean: return v.as_bool() ? "true" : "false";
    case Value::Kind::integer: return std::to_string(v.as_int());
    case Value::Kind::floating: return std::isfinite(v.as_float()) ? js_number(v.as_float()) : "null";
    case Value::Kind::string: return json_quote(v.str(), o.ensure_ascii);
    case Value::Kind::callable: throw RenderError("Cannot convert to JSON: a function");
    default: break;
  }
  const std::string pad = o.indent > 0 ? std::string(o.indent, ' ') : "";
  std::string base = "\n";
  for (int i = 0; i < depth; ++i) base += pad;
  const std::string child = base + pad;
  std::string out;
  if (v.is_list()) {
    const List& l = v.list();
    if (l.empty()) return "[]";
    out = "[";
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += item_sep;
      if (o.indent > 0) out += child;
      out += to_json(l[i], o, undefined_as_null, depth + 1);
    }
    return out + (o.indent > 0 ? base : "") + "]";
  }
  auto entries = v.dict_ref().entries;
  if (entries.empty()) return "{}";
  if (o.sort_keys)
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += item_sep;
    if (o.indent > 0) out += child;
    out += json_quote(entries[i].first, o.ensure_ascii) + key_sep;
    out += to_json(entries[i].second, o, undefined_as_null, depth + 1);
  }
  return out + (o.indent > 0 ? base : "") + "}";
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      const double d = j.get<double>();
      if (d == std::floor(d) && std::fabs(d) < 9e15) return Value(static_cast<int64_t>(d));
      return Value(d);
    }
    case nlohmann::json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, e] : j.items()) d->set(k, from_json(e));
      return Value(d);
    }
    default: return Value();
  }
}

namespace {

// JavaScript's ToNumber of a string: trimmed decimal text, "" is 0, else NaN.
double js_to_number(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v"), e = s.find_last_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return 0;
  const std::string t = s.substr(b, e - b + 1);
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() ? d : NAN;
}

bool is_primitive_number(const Value& v) { return v.is_number() || v.is_bool(); }

}  // namespace

bool strict_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::boolean: return a.as_bool() == b.as_bool();
    case Value::Kind::string: return a.str() == b.str();
    default: return a.identity() == b.identity();
  }
}

bool loose_equal(const Value& a, const Value& b) {
  const bool a_nil = a.is_none() || a.is_undefined(), b_nil = b.is_none() || b.is_undefined();
  if (a_nil || b_nil) return a_nil && b_nil;
  if (is_primitive_number(a) && is_primitive_number(b)) return a.as_number() == b.as_number();
  if (a.is_string() && is_primitive_number(b)) return js_to_number(a.str()) == b.as_number();
  if (b.is_string() && is_primitive_number(a)) return js_to_number(b.str()) == a.as_number();
  return strict_equal(a, b);
}

}  // namespace pagoda::jinja
