// Binary operators and slices, with @huggingface/jinja's typing: arithmetic
// on ints stays int (floats make float; `/` always float), `~` and string `+`
// concatenate text, `in` tests list membership (===), substrings and dict
// keys, `==` is JavaScript's loose equality; undefined or none operands to
// anything else raise. Strings also compare with < > as in Python.
#include <cmath>

#include "jinja/error.h"
#include "jinja/eval.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  throw RenderError("unsupported operand types for " + op + ": " + a.type_name() + " and " + b.type_name());
}

Value arithmetic_int(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  bool overflow = false;
  if (op == "+")
    overflow = __builtin_add_overflow(a, b, &r);
  else if (op == "-")
    overflow = __builtin_sub_overflow(a, b, &r);
  else if (op == "*")
    overflow = __builtin_mul_overflow(a, b, &r);
  else if (op == "//" || op == "%") {
    if (b == 0) throw RenderError("integer division or modulo by zero");
    if (a == INT64_MIN && b == -1) return Value(op == "//" ? -static_cast<double>(a) : 0.0);
    if (op == "%") return Value(a % b);  // JavaScript's remainder: the sign of a
    r = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --r;
    return Value(r);
  }
  if (overflow) {
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }
  return Value(r);
}

Value arithmetic(const std::string& op, const Value& l, const Value& r) {
  const bool is_float = l.is_float() || r.is_float();
  if (op == "<") return Value(l.as_number() < r.as_number());
  if (op == ">") return Value(l.as_number() > r.as_number());
  if (op == "<=") return Value(l.as_number() <= r.as_number());
  if (op == ">=") return Value(l.as_number() >= r.as_number());
  if (op == "/") {
    if (r.as_number() == 0) throw RenderError("division by zero");
    return Value(l.as_number() / r.as_number());
  }
  if (!is_float) {
    if (op == "+" || op == "-" || op == "*" || op == "//" || op == "%")
      return arithmetic_int(op, l.as_int(), r.as_int());
  }
  const double a = l.as_number(), b = r.as_number();
  if (op == "+") return Value(a + b);
  if (op == "-") return Value(a - b);
  if (op == "*") return Value(a * b);
  if (op == "//" || op == "%") {
    if (b == 0) throw RenderError("float division or modulo by zero");
    return Value(op == "//" ? std::floor(a / b) : std::fmod(a, b));
  }
  bad_operands(op, l, r);
}

Value power(const Value& l, const Value& r) {
  const double a = l.as_number(), b = r.as_number();
  if (a == 0 && b < 0) throw RenderError("0.0 cannot be raised to a negative power");
  const double p = std::pow(a, b);
  if (!std::isfinite(p)) throw RenderError("exponentiation result is not a finite real number");
  if (l.is_float() || r.is_float() || b < 0 || std::fabs(p) >= 9.2e18) return Value(p);
  return Value(static_cast<int64_t>(p));
}

bool numeric_like(const Value& v) { return v.is_number() || v.is_bool(); }

}  // namespace

Value Evaluator::eval_binary(const Node& n, const ScopePtr& scope) {
  const std::string& op = n.name;
  const Value l = eval(*n.a, scope);
  if (op == "and") return l.truthy() ? eval(*n.b, scope) : l;
  if (op == "or") return l.truthy() ? l : eval(*n.b, scope);
  const Value r = eval(*n.b, scope);
  if (op == "==") return Value(loose_equal(l, r));
  if (op == "!=") return Value(!loose_equal(l, r));
  const bool in_op = op == "in" || op == "not in";
  if (l.is_undefined() || r.is_undefined()) {
    if (r.is_undefined() && in_op) return Value(op == "not in");
    throw RenderError("cannot apply " + op + " to an undefined value");
  }
  if (l.is_none() || r.is_none()) throw RenderError("cannot apply " + op + " to none");
  if (op == "~") return Value(to_concat(l) + to_concat(r));
  if (op == "**" && numeric_like(l) && numeric_like(r)) return power(l, r);
  if (l.is_number() && r.is_number()) return arithmetic(op, l, r);
  if (l.is_list() && r.is_list() && op == "+") {
    charge(l.list().size() + r.list().size());
    List out = l.list();
    out.insert(out.end(), r.list().begin(), r.list().end());
    return Value(std::move(out));
  }
  if (r.is_list() && in_op) {
    charge(r.list().size());
    bool found = false;
    for (const Value& x : r.list()) found = found || strict_equal(x, l);
    return Value(found == (op == "in"));
  }
  if ((l.is_string() || r.is_string()) && op == "+") {
    std::string s = to_concat(l) + to_concat(r);
    charge(s.size() / 16);
    if (s.size() > limits().max_output_bytes) throw LimitExceeded("string too large");
    return Value(std::move(s));
  }
  if (l.is_string() && r.is_string()) {
    if (in_op) return Value((r.str().find(l.str()) != std::string::npos) == (op == "in"));
    const int c = l.str().compare(r.str());
    if (op == "<") return Value(c < 0);
    if (op == ">") return Value(c > 0);
    if (op == "<=") return Value(c <= 0);
    if (op == ">=") return Value(c >= 0);
  }
  if (l.is_string() && r.is_mapping() && in_op) return Value((r.dict_ref().find(l.str()) != nullptr) == (op == "in"));
  bad_operands(op, l, r);
}

std::vector<size_t> slice_indexes(size_t size, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto as_opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int()) throw RenderError(std::string("slice ") + what + " must be an integer");
    return v.as_int();
  };
  const int64_t n = static_cast<int64_t>(size);
  const int64_t step = as_opt(step_v, "step").value_or(1);
  if (step == 0) throw RenderError("slice step cannot be zero");
  auto start_o = as_opt(start_v, "start"), stop_o = as_opt(stop_v, "stop");
  int64_t start, stop;
  if (step > 0) {
    start = start_o ? (*start_o < 0 ? std::max<int64_t>(n + *start_o, 0) : std::min(*start_o, n)) : 0;
    stop = stop_o ? (*stop_o < 0 ? std::max<int64_t>(n + *stop_o, 0) : std::min(*stop_o, n)) : n;
  } else {
    start = start_o ? (*start_o < 0 ? std::max<int64_t>(n + *start_o, -1) : std::min(*start_o, n - 1)) : n - 1;
    stop = stop_o ? (*stop_o < -1 ? std::max<int64_t>(n + *stop_o, -1) : std::min(*stop_o, n - 1)) : -1;
  }
  std::vector<size_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(static_cast<size_t>(i));
  return out;
}

Value Evaluator::eval_slice(const Node& n, const ScopePtr& scope) {
  const Value obj = eval(*n.a, scope);
  if (!obj.is_list() && !obj.is_string()) throw RenderError(std::string("cannot slice a ") + obj.type_name());
  Value parts[3];
  for (int i = 0; i < 3; ++i)
    if (n.items[i]) parts[i] = eval(*n.items[i], scope);
  Args none;
  const Value items = obj.is_list() ? obj : apply_filter(*this, "list", obj, none, false);
  const auto idx = slice_indexes(items.list().size(), parts[0], parts[1], parts[2]);
  charge(idx.size());
  if (obj.is_list()) {
    List out;
    for (size_t i : idx) out.push_back(items.list()[i]);
    return Value(std::move(out));
  }
  std::string out;
  for (size_t i : idx) out += items.list()[i].str();
  return Value(std::move(out));
}

}  // namespace pagoda::jinja
