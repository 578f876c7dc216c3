// JSON Schema -> grammar.
//
// Supported: type (a name or a list), properties (emitted in the order the
// schema gives them), required, additionalProperties (false, true, or a
// schema; ABSENT means false: outputs carry only declared properties), enum,
// const, anyOf, oneOf (treated as anyOf: exclusivity is not enforced),
// allOf (of object schemas, merged; one keyword with two different values is
// unsupported), items, prefixItems, minItems, maxItems, minLength, maxLength,
// pattern (regex.cpp's dialect, matched against the whole string), format
// (json_formats.h), minimum / maximum / exclusiveMinimum / exclusiveMaximum
// (also draft 4's booleans) and multipleOf on integers and numbers, exact
// (json_number.h; bounded numbers are written without exponents), $ref to
// "#" or a JSON pointer into the document ($defs, definitions; recursion
// allowed), nullable, boolean schemas. Annotations (title, description,
// default, examples, ...) are ignored silently. Any other keyword, or one the
// grammar cannot enforce in context, is InvalidArgument naming it in strict
// mode, else ignored and listed in JsonSchemaGrammar::ignored.
//
// Strings: a pattern and a format together enforce the pattern (zod sends
// both: its pattern is its definition of the format), except zod's own
// lookahead spellings of hostname and duration, which stand for the format
// (json_formats.h). minLength / maxLength beside a pattern or format hold only
// when the regex's own lengths lie within them; otherwise they are unsupported.
//
// Whitespace: compact by default ({"a":1,"b":[2,3]}, no spaces at all); with
// any_whitespace, the built-in JSON grammar's bounded gaps (frontends.h).
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "grammar/frontends.h"
#include "grammar/json_formats.h"
#include "grammar/json_number.h"
#include "grammar/utf8_class.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;

const std::set<std::string>& annotations() {
  static const std::set<std::string> s = {"title",    "description", "default",  "examples",  "$schema", "$id",
                                          "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions"};
  return s;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> s = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "multipleOf",
                                          "$ref",
                                          "nullable"};
  return s;
}

Expr lit(const std::string& s) { return Expr::literal(s); }

// Byte lengths an expression can match: [min, max], max nullopt when unbounded
// (a rule reference counts as unbounded: conservative).
std::pair<uint64_t, std::optional<uint64_t>> byte_lengths(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Bytes: return {1, 1};
    case Expr::Kind::Ref: return {0, std::nullopt};
    case Expr::Kind::Repeat: {
      auto [lo, hi] = byte_lengths(e.kids[0]);
      std::optional<uint64_t> max;
      if (e.max != Expr::kUnbounded && hi) max = *hi * e.max;
      return {lo * e.min, max};
    }
    case Expr::Kind::Seq: {
      uint64_t lo = 0;
      std::optional<uint64_t> hi = 0;
      for (const auto& k : e.kids) {
        auto [a, b] = byte_lengths(k);
        lo += a;
        hi = hi && b ? std::optional<uint64_t>(*hi + *b) : std::nullopt;
      }
      return {lo, hi};
    }
    case Expr::Kind::Alt: {
      uint64_t lo = UINT64_MAX;
      std::optional<uint64_t> hi = 0;
      for (const auto& k : e.kids) {
        auto [a, b] = byte_lengths(k);
        lo = std::min(lo, a);
        hi = hi && b ? std::optional<uint64_t>(std::max(*hi, *b)) : std::nullopt;
      }
      return {e.kids.empty() ? 0 : lo, hi};
    }
  }
  return {0, std::nullopt};
}

// Only printable ASCII other than '\\' (no escapes, no multi-byte characters): bytes are characters.
bool plain_ascii(const Expr& e) {
  if (e.kind == Expr::Kind::Ref) return false;
  if (e.kind == Expr::Kind::Bytes) {
    for (int c = 0; c < 256; ++c)
      if (e.bytes.test(uint8_t(c)) && (c < 0x20 || c > 0x7e || c == '\\')) return false;
    return true;
  }
  for (const auto& k : e.kids)
    if (!plain_ascii(k)) return false;
  return true;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& o, GrammarBuilder& b) : root_(root), o_(o), b_(b) {}

  // The document's root schema as an expression in b_ (its $ref targets defined as rules).
  Expr run(std::vector<std::string>& ignored) {
    Expr e = schema(root_, "", 0);
    while (!pending_.empty()) {  // $ref targets, breadth first: no recursion through refs
      auto [rule, ptr] = pending_.front();
      pending_.pop_front();
      b_.define(rule, schema(resolve(ptr), ptr, 0));
    }
    ignored.insert(ignored.end(), ignored_.begin(), ignored_.end());
    return e;
  }

 private:
  Expr W() {
    if (!o_.any_whitespace) return Expr::empty();
    add_json_value_rules(b_, true);
    return Expr::ref(b_.rule("ws"));
  }
  Expr json_rule(const char* name) {
    add_json_value_rules(b_, o_.any_whitespace);
    return Expr::ref(b_.rule(name));
  }

  [[noreturn]] void error(const std::string& path, const std::string& what) const {
    fail<InvalidArgument>("JSON schema at '{}': {}", path.empty() ? "#" : path, what);
  }

  // A keyword the grammar cannot enforce: an error under strict, else listed (and logged by the caller).
  void unsupported(const std::string& path, const std::string& key, const std::string& why = "") {
    if (o_.strict) error(path, "unsupported keyword '" + key + "'" + (why.empty() ? "" : ": " + why));
    ignored_.push_back((path.empty() ? "#" : path) + "/" + key + (why.empty() ? "" : " (" + why + ")"));
  }

  const json& resolve(const std::string& ref) {
    if (ref == "#") return root_;
    if (!ref.starts_with("#/")) error(ref, "only local $ref (\"#\" or \"#/...\") is supported");
    try {
      const json::json_pointer p(ref.substr(1));
      if (!root_.contains(p)) error(ref, "$ref target not found");
      return root_.at(p);
    } catch (const json::exception& e) {
      error(ref, std::string("bad $ref: ") + e.what());
    }
  }

  Expr ref(const std::string& path, const json& r) {
    if (!r.is_string()) error(path, "$ref must be a string");
    const std::string target = r.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return Expr::ref(it->second);
    resolve(target);  // fail now, naming where the bad $ref is
    const uint32_t rule = b_.fresh_rule("ref");
    refs_.emplace(target, rule);
    pending_.push_back({rule, target});
    return Expr::ref(rule);
  }

  uint32_t count(const std::string& path, const json& s, const char* key, uint32_t dflt) {
    if (!s.contains(key)) return dflt;
    const json& v = s[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      error(path, std::string(key) + " must be a non-negative integer");
    const uint64_t n = v.get<uint64_t>();
    if (n > o_.limits.max_repeat)
      error(path, std::string(key) + " exceeds the limit " + std::to_string(o_.limits.max_repeat));
    return uint32_t(n);
  }

  Expr schema(const json& s, const std::string& path, uint32_t depth) {
    if (depth > o_.limits.max_depth) error(path, "schemas nested deeper than " + std::to_string(o_.limits.max_depth));
    if (s.is_boolean()) return s.get<bool>() ? json_rule("json-value") : Expr::byte_set(ByteSet{});
    if (!s.is_object()) error(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!supported().count(k) && !annotations().count(k)) unsupported(path, k);
    if (s.contains("nullable") && s["nullable"] == true) {
      json copy = s;
      copy.erase("nullable");
      return Expr::alt({schema(copy, path, depth + 1), lit("null")});
    }
    if (s.contains("$ref")) return ref(path, s["$ref"]);
    if (s.contains("const")) return lit(s["const"].dump());
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) error(path, "enum must be a non-empty array");
      std::vector<Expr> alts;
      for (const auto& v : s["enum"]) alts.push_back(lit(v.dump()));
      return Expr::alt(std::move(alts));
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array() || s[key].empty()) error(path, std::string(key) + " must be a non-empty array");
      std::vector<Expr> alts;
      for (size_t i = 0; i < s[key].size(); ++i)
        alts.push_back(schema(s[key][i], path + "/" + key + "/" + std::to_string(i), depth + 1));
      return Expr::alt(std::move(alts));
    }
    if (s.contains("allOf")) return schema(merge_all_of(s, path), path, depth + 1);
    if (s.contains("type") && s["type"].is_array()) {
      std::vector<Expr> alts;
      for (const auto& t : s["type"]) {
        json copy = s;
        copy["type"] = t;
        alts.push_back(schema(copy, path, depth + 1));
      }
      if (alts.empty()) error(path, "type must not be an empty list");
      return Expr::alt(std::move(alts));
    }
    return typed(s, path, depth);
  }

  // allOf of object schemas: one object with every property and requirement.
  json merge_all_of(const json& s, const std::string& path) {
    if (!s["allOf"].is_array()) error(path, "allOf must be an array");
    json merged = s;
    merged.erase("allOf");
    for (const auto& part0 : s["allOf"]) {
      const json& part =
          part0.is_object() && part0.contains("$ref") ? resolve(part0["$ref"].get<std::string>()) : part0;
      if (!part.is_object()) error(path, "allOf supports object schemas only");
      for (const auto& [k, v] : part.items()) {
        if (k == "properties") {
          for (const auto& [pk, pv] : v.items()) merged["properties"][pk] = pv;
        } else if (k == "required") {
          for (const auto& r : v) merged["required"].push_back(r);
        } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
          error(path, "allOf with nested " + k + " is not supported");
        } else if (!merged.contains(k)) {
          merged[k] = v;
        } else if (merged[k] != v && !annotations().count(k)) {
          unsupported(path, "allOf/" + k, "two different values cannot both be enforced");
        }
      }
    }
    return merged;
  }

  Expr typed(const json& s, const std::string& path, uint32_t depth) {
    std::string type;
    if (s.contains("type")) {
      if (!s["type"].is_string()) error(path, "type must be a string or a list");
      type = s["type"].get<std::string>();
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      type = "object";
    } else if (s.contains("items") || s.contains("prefixItems")) {
      type = "array";
    } else if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength")) {
      type = "string";
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
               s.contains("exclusiveMaximum") || s.contains("multipleOf")) {
      type = "number";  // numeric keywords constrain numbers only: writing a number keeps them
    } else {
      return json_rule("json-value");
    }
    if (type == "string") return string(s, path);
    if (type == "integer" || type == "number") return number(s, path, type == "integer");
    if (type == "boolean") return Expr::alt({lit("true"), lit("false")});
    if (type == "null") return lit("null");
    if (type == "object") return object(s, path, depth);
    if (type == "array") return array(s, path, depth);
    error(path, "unknown type '" + type + "'");
  }

  Expr number(const json& s, const std::string& path, bool integer) {
    NumberConstraint c;
    c.integer = integer;
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!s.contains(key)) return std::nullopt;
      if (!s[key].is_number()) error(path, std::string(key) + " must be a number");
      return s[key].dump();
    };
    c.minimum = text("minimum");
    c.maximum = text("maximum");
    c.multiple_of = text("multipleOf");
    // Draft 4's boolean exclusiveMinimum / exclusiveMaximum make minimum / maximum exclusive.
    for (auto [key, incl, excl] : {std::tuple{"exclusiveMinimum", &c.minimum, &c.exclusive_minimum},
                                   std::tuple{"exclusiveMaximum", &c.maximum, &c.exclusive_maximum}}) {
      if (s.contains(key) && s[key].is_boolean()) {
        if (s[key] == true) std::swap(*incl, *excl);
      } else {
        *excl = text(key);
      }
    }
    if (!c.bounded() && !integer) return json_rule("json-number");
    std::optional<Expr> e;
    try {
      e = number_expr(b_, c);
    } catch (const NumberTooComplex& x) {
      unsupported(path, "multipleOf", x.what());
      c.multiple_of.reset();
      e = number_expr(b_, c);
    } catch (const InvalidArgument& x) {
      error(path, x.what());
    }
    if (!e) return Expr::byte_set(ByteSet{});  // no number satisfies the bounds
    if (integer || c.bounded()) return std::move(*e);
    return json_rule("json-number");  // multipleOf was dropped and nothing else bounds it
  }

  Expr string(const json& s, const std::string& path) {
    std::optional<std::string> pattern, format;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) error(path, "pattern must be a string");
      pattern = s["pattern"].get<std::string>();
    }
    const char* format_re = nullptr;
    if (s.contains("format")) {
      format = s["format"].is_string() ? s["format"].get<std::string>() : s["format"].dump();
      format_re = format_regex(*format);
      if (!format_re && !pattern) unsupported(path, "format", "'" + *format + "' is not a supported format");
    }
    std::optional<Expr> body;  // the string's content, when a pattern or format gives it
    if (pattern && format_re && pattern_is_format(*format, *pattern)) {
      body = regex_expr(b_, format_re, true);  // the generator's lookahead spelling of the same format
    } else if (pattern) {
      try {
        body = regex_expr(b_, *pattern, true);  // beside a format, the pattern is what is enforced
      } catch (const InvalidArgument& x) {
        if (!format_re) error(path, x.what());
        unsupported(path, "pattern", std::string(x.what()) + "; format '" + *format + "' enforced instead");
        body = regex_expr(b_, format_re, true);
      }
    } else if (format_re) {
      body = regex_expr(b_, format_re, true);
    }
    const uint32_t min = count(path, s, "minLength", 0);
    const uint32_t max = s.contains("maxLength") ? count(path, s, "maxLength", 0) : Expr::kUnbounded;
    if (body) {
      // Lengths cannot be intersected with a regex; they hold when the regex's own lengths lie within them
      // (counted in bytes: a character is at least one; outside plain ASCII, at most six: \uXXXX).
      const auto [lo, hi] = byte_lengths(*body);
      const uint64_t min_chars = plain_ascii(*body) ? lo : (lo + 5) / 6;
      if (max != Expr::kUnbounded && !(hi && *hi <= max))
        unsupported(path, "maxLength", "with a pattern or format that can be longer");
      if (min > 0 && min_chars < min) unsupported(path, "minLength", "with a pattern or format that can be shorter");
      return Expr::seq({lit("\""), std::move(*body), lit("\"")});
    }
    if (min == 0 && max == Expr::kUnbounded) return json_rule("json-string");
    add_json_value_rules(b_, o_.any_whitespace);
    return Expr::seq({lit("\""), Expr::repeat(Expr::ref(b_.rule("json-char")), min, max), lit("\"")});
  }

  Expr object(const json& s, const std::string& path, uint32_t depth) {
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) error(path, "required must be an array");
      for (const auto& r : s["required"]) required.insert(r.is_string() ? r.get<std::string>() : r.dump());
    }
    struct Prop {
      Expr kv;
      bool required;
    };
    std::vector<Prop> props;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) error(path, "properties must be an object");
      for (const auto& [k, v] : s["properties"].items()) {
        Expr value = schema(v, path + "/properties/" + k, depth + 1);
        props.push_back(
            {Expr::seq({lit(json(k).dump()), W(), lit(":"), W(), std::move(value)}), required.count(k) > 0});
        required.erase(k);
      }
    }
    if (!required.empty()) error(path, "required property '" + *required.begin() + "' is not in properties");
    std::optional<Expr> extra;  // one additional member
    if (s.contains("additionalProperties") && s["additionalProperties"] != false) {
      const json& ap = s["additionalProperties"];
      const uint32_t r = b_.fresh_rule("additional");
      b_.define(r, ap == true ? json_rule("json-value") : schema(ap, path + "/additionalProperties", depth + 1));
      extra = Expr::seq({json_rule("json-string"), W(), lit(":"), W(), Expr::ref(r)});
    }
    // after[i]: members i.. when one was written already (each starts with ","),
    // first[i]: the same when none was; optional members may be skipped.
    const size_t n = props.size();
    std::vector<uint32_t> after(n + 1), first(n + 1);
    for (size_t i = 0; i <= n; ++i) after[i] = b_.fresh_rule("obj"), first[i] = b_.fresh_rule("obj");
    auto comma = [&] { return Expr::seq({lit(","), W()}); };
    b_.define(after[n], extra ? Expr::star(Expr::seq({comma(), *extra, W()})) : Expr::empty());
    b_.define(first[n], extra ? Expr::optional(Expr::seq({*extra, W(), Expr::ref(after[n])})) : Expr::empty());
    for (size_t i = n; i-- > 0;) {
      Expr with_after = Expr::seq({comma(), props[i].kv, W(), Expr::ref(after[i + 1])});
      Expr with_first = Expr::seq({props[i].kv, W(), Expr::ref(after[i + 1])});
      if (props[i].required) {
        b_.define(after[i], std::move(with_after));
        b_.define(first[i], std::move(with_first));
      } else {
        b_.define(after[i], Expr::alt({std::move(with_after), Expr::ref(after[i + 1])}));
        b_.define(first[i], Expr::alt({std::move(with_first), Expr::ref(first[i + 1])}));
      }
    }
    return Expr::seq({lit("{"), W(), Expr::ref(first[0]), lit("}")});
  }

  Expr array(const json& s, const std::string& path, uint32_t depth) {
    std::vector<Expr> prefix;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) error(path, "prefixItems must be an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        const uint32_t r = b_.fresh_rule("item");
        b_.define(r, schema(s["prefixItems"][i], path + "/prefixItems/" + std::to_string(i), depth + 1));
        prefix.push_back(Expr::ref(r));
      }
    }
    const uint32_t k = uint32_t(prefix.size());
    const uint32_t min = count(path, s, "minItems", 0);
    uint32_t max = s.contains("maxItems") ? count(path, s, "maxItems", 0) : Expr::kUnbounded;
    std::optional<Expr> item;
    if (!s.contains("items") || s["items"] != false) {
      const uint32_t r = b_.fresh_rule("item");
      b_.define(r, s.contains("items") ? schema(s["items"], path + "/items", depth + 1) : json_rule("json-value"));
      item = Expr::ref(r);
    } else {
      max = std::min(max, k);
    }
    if (min > max) return Expr::byte_set(ByteSet{});
    auto elem = [&](uint32_t i) { return i < k ? prefix[i] : *item; };
    // tail(i): the rest of the list after i elements (i >= 1).
    std::function<Expr(uint32_t)> tail = [&](uint32_t i) -> Expr {
      if (i >= k) {
        if (!item || (max != Expr::kUnbounded && i >= max)) return Expr::empty();
        const uint32_t lo = min > i ? min - i : 0;
        const uint32_t hi = max == Expr::kUnbounded ? Expr::kUnbounded : max - i;
        return Expr::repeat(Expr::seq({lit(","), W(), *item, W()}), lo, hi);
      }
      if (i >= max) return Expr::empty();
      Expr more = Expr::seq({lit(","), W(), elem(i), W(), tail(i + 1)});
      return i >= min ? Expr::alt({Expr::empty(), std::move(more)}) : std::move(more);
    };
    if (max == 0 || (k == 0 && !item)) return Expr::seq({lit("["), W(), lit("]")});
    Expr body = Expr::seq({elem(0), W(), tail(1)});
    if (min == 0) body = Expr::optional(std::move(body));
    return Expr::seq({lit("["), W(), std::move(body), lit("]")});
  }

  const json& root_;
  const JsonSchemaOptions& o_;
  GrammarBuilder& b_;
  std::vector<std::string> ignored_;
  std::map<std::string, uint32_t> refs_;
  std::deque<std::pair<uint32_t, std::string>> pending_;
};

// The schema text parsed, within the input and nesting limits.
json parse_schema(std::string_view text, const JsonSchemaOptions& options) {
  if (text.size() > options.limits.max_input_bytes)
    fail<InvalidArgument>("JSON schema of {} bytes exceeds the limit of {}", text.size(),
                          options.limits.max_input_bytes);
  // Bound the nesting before parsing: deep documents would only be refused later.
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > 4 * size_t(options.limits.max_depth))
        fail<InvalidArgument>("JSON schema nested deeper than {} levels", 4 * options.limits.max_depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail<InvalidArgument>("JSON schema is not valid JSON: {}", e.what());
  }
}

}  // namespace

Expr json_schema_expr(GrammarBuilder& b, std::string_view schema, const JsonSchemaOptions& options,
                      std::vector<std::string>& ignored) {
  const json root = parse_schema(schema, options);
  return SchemaCompiler(root, options, b).run(ignored);
}

JsonSchemaGrammar compile_json_schema(std::string_view text, const JsonSchemaOptions& options) {
  GrammarBuilder b(options.limits);
  JsonSchemaGrammar out;
  const uint32_t root = b.rule("root");
  b.define(root, json_schema_expr(b, text, options, out.ignored));
  out.grammar = b.finish(root);
  return out;
}

}  // namespace pagoda::grammar
