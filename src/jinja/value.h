// Jinja values: what templates compute with. The semantics follow
// @huggingface/jinja (the JavaScript Jinja that Hugging Face's chat UIs and
// our oracle use), which follows Python's Jinja2 for everything chat templates
// rely on:
//   undefined  a missing variable or attribute; prints as "", is falsy, and
//              reading an attribute of it gives undefined again
//   none       JSON null / Python None; prints as "" at the top level
//   bool, int (64-bit), float (double), string (UTF-8 bytes)
//   list       shared by reference (list.append mutates every alias, as in Python)
//   dict       string keys in insertion order (JSON objects keep their order)
//   namespace  a dict whose attributes `{% set ns.x = ... %}` may assign
//   callable   a built-in function, a macro, or a call block's `caller`
// Lists, dicts and callables are shared (shared_ptr): copying a Value is cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace pagoda::jinja {

class Value;
class Evaluator;
struct Scope;
using List = std::vector<Value>;

// Insertion-ordered string-keyed map; a namespace() is one with is_namespace set.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value v);
};

// Arguments of a call: positional first, then keyword ones in call order.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* kwarg(std::string_view name) const;
  // Positional i, else keyword `name`, else nullptr.
  const Value* get(size_t i, std::string_view name) const;
};

// A function value; `scope` is the caller's scope (macros see the variables
// of where they are called from, as in @huggingface/jinja).
struct Callable {
  using Fn = std::function<Value(Evaluator&, const std::shared_ptr<Scope>& scope, Args& args)>;
  std::string name;
  Fn fn;
};

class Value {
 public:
  enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, callable };

  Value() = default;  // undefined
  static Value none() { return Value(nullptr); }
  Value(std::nullptr_t) : v_(nullptr) {}
  Value(bool b) : v_(b) {}
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  Value(std::shared_ptr<List> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<Dict> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}
  static Value dict() { return Value(std::make_shared<Dict>()); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::undefined; }
  bool is_none() const { return kind() == Kind::none; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_int() const { return kind() == Kind::integer; }
  bool is_float() const { return kind() == Kind::floating; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::string; }
  bool is_list() const { return kind() == Kind::list; }
  bool is_dict() const { return kind() == Kind::dict; }  // namespaces included
  bool is_namespace() const { return is_dict() && dict_ref().is_namespace; }
  bool is_mapping() const { return is_dict() && !dict_ref().is_namespace; }
  bool is_callable() const { return kind() == Kind::callable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  double as_number() const;  // int, float or bool as a double
  const std::string& str() const { return std::get<std::string>(v_); }
  List& list() const { return *std::get<std::shared_ptr<List>>(v_); }
  Dict& dict_ref() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(v_); }
  const void* identity() const;  // the shared object of a list/dict/callable, else nullptr

  bool truthy() const;
  const char* type_name() const;

 private:
  std::variant<std::monostate, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Dict>, std::shared_ptr<Callable>>
      v_;
};

// A double as JavaScript's Number#toString writes it ("0.1", "1e+21", "2").
std::string js_number(double d);
// A float as a template prints it: integral ones keep ".0" ("2.0", "-0.0").
std::string float_text(double d);
// What `{{ v }}` prints (undefined and none print nothing).
std::string to_output(const Value& v);
// What `~` and string `+` make of an operand.
std::string to_concat(const Value& v);

// tojson's options, as Hugging Face's chat templates pass them.
struct JsonOptions {
  int indent = -1;  // < 0: none
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;
};
// JSON text of v; undefined writes "null" when undefined_as_null, else "undefined".
std::string to_json(const Value& v, const JsonOptions& o = {}, bool undefined_as_null = true, int depth = 0);
// JSON string literal of s (JSON.stringify's escaping), optionally ASCII only.
std::string json_quote(std::string_view s, bool ensure_ascii);

// Context values from JSON (integral numbers become ints, as in JavaScript).
Value from_json(const nlohmann::ordered_json& j);

// JavaScript loose equality (==) over template values, as the oracle compares.
bool loose_equal(const Value& a, const Value& b);
// Strict equality (===): same kind and value, or the same shared object.
bool strict_equal(const Value& a, const Value& b);

}  // namespace pagoda::jinja
