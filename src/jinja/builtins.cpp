// Tests (`x is defined`), globals (range, namespace, raise_exception,
// strftime_now, dict, true/false/none) and the methods of strings, dicts and
// lists (`s.strip()`, `d.items()`, `l.append(x)`), as real chat templates use
// them. Python's Jinja semantics where @huggingface/jinja has the same
// function; a few Python-only ones (list.append, tests with arguments,
// strip(chars)) are added because templates written for transformers use them.
#include <cmath>
#include <ctime>

#include "jinja/error.h"
#include "jinja/eval.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

const Value& arg(const Args& a, size_t i, const char* fn) {
  if (i >= a.pos.size())
    throw RenderError(std::string(fn) + "() takes at least " + std::to_string(i + 1) + " argument(s)");
  return a.pos[i];
}

const std::string& str_arg(const Value& v, const char* what) {
  if (!v.is_string()) throw RenderError(std::string(what) + " must be a string, got a " + v.type_name());
  return v.str();
}

Value make_fn(std::string name, Callable::Fn fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value(c);
}

bool affix_match(const std::string& s, const Value& pattern, bool prefix, const char* fn) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (pattern.is_string()) return one(pattern.str());
  if (pattern.is_list()) {
    for (const Value& p : pattern.list())
      if (one(str_arg(p, fn))) return true;
    return false;
  }
  throw RenderError(std::string(fn) + "() argument must be a string or a tuple of strings");
}

Value string_method(const std::string& s, const std::string& name, Args& a) {
  auto chars = [&]() -> std::string {
    if (a.pos.empty() || a.pos[0].is_none()) return "";
    return str_arg(a.pos[0], "strip argument");
  };
  if (name == "upper") return Value(ascii_upper(s));
  if (name == "lower") return Value(ascii_lower(s));
  if (name == "strip") return Value(strip_chars(s, chars(), true, true));
  if (name == "lstrip") return Value(strip_chars(s, chars(), true, false));
  if (name == "rstrip") return Value(strip_chars(s, chars(), false, true));
  if (name == "title") return Value(title_case(s));
  if (name == "capitalize") return Value(s.empty() ? s : ascii_upper(s.substr(0, 1)) + s.substr(1));
  if (name == "startswith") return Value(affix_match(s, arg(a, 0, "startswith"), true, "startswith"));
  if (name == "endswith") return Value(affix_match(s, arg(a, 0, "endswith"), false, "endswith"));
  if (name == "split") {
    const Value* sep = a.get(0, "sep");
    const Value* max = a.get(1, "maxsplit");
    if (sep && !sep->is_none() && !sep->is_string()) throw RenderError("split() separator must be a string or None");
    if (sep && sep->is_string() && sep->str().empty()) throw RenderError("empty separator");
    if (max && !max->is_int()) throw RenderError("split() maxsplit must be an integer");
    List out;
    for (auto& part : split(s, sep && sep->is_string() ? &sep->str() : nullptr, max ? max->as_int() : -1))
      out.emplace_back(std::move(part));
    return Value(std::move(out));
  }
  if (name == "replace") {
    const std::string& from = str_arg(arg(a, 0, "replace"), "replace() argument");
    const std::string& to = str_arg(arg(a, 1, "replace"), "replace() argument");
    const Value* count = a.get(2, "count");
    if (count && !count->is_int() && !count->is_none()) throw RenderError("replace() count must be an integer");
    return Value(replace_all(s, from, to, count && count->is_int() ? count->as_int() : -1));
  }
  throw RenderError("strings have no method '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name, Args& a) {
  const Dict& dict = d.dict_ref();
  if (name == "get") {
    const Value& key = arg(a, 0, "get");
    if (!key.is_string()) throw RenderError(std::string("dict keys are strings, got a ") + key.type_name());
    if (const Value* v = dict.find(key.str())) return *v;
    const Value* def = a.get(1, "default");
    return def ? *def : Value::none();
  }
  List out;
  for (const auto& [k, v] : dict.entries) {
    if (name == "keys")
      out.emplace_back(k);
    else if (name == "values")
      out.push_back(v);
    else
      out.emplace_back(List{Value(k), v});
  }
  return Value(std::move(out));
}

Value list_method(const Value& l, const std::string& name, Args& a) {
  List& list = l.list();
  if (name == "append") {
    if (list.size() >= (1u << 22)) throw LimitExceeded("list too long");
    list.push_back(arg(a, 0, "append"));
    return Value::none();
  }
  if (name == "pop") {
    if (list.empty()) throw RenderError("pop from empty list");
    int64_t i = a.pos.empty() ? -1 : a.pos[0].is_int() ? a.pos[0].as_int() : throw RenderError("pop() index");
    const int64_t n = static_cast<int64_t>(list.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw RenderError("pop index out of range");
    Value v = list[i];
    list.erase(list.begin() + i);
    return v;
  }
  throw RenderError("lists have no method '" + name + "'");
}

bool is_string_method(const std::string& n) {
  for (const char* m : {"upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize", "startswith", "endswith",
                        "split", "replace"})
    if (n == m) return true;
  return false;
}

}  // namespace

Value builtin_member(const Value& obj, const std::string& name) {
  auto bind = [&](Value (*method)(const Value&, const std::string&, Args&)) {
    return make_fn(name, [obj, name, method](Evaluator&, const ScopePtr&, Args& a) { return method(obj, name, a); });
  };
  if (obj.is_string()) {
    if (name == "length") return Value(static_cast<int64_t>(utf16_length(obj.str())));
    if (is_string_method(name))
      return bind([](const Value& o, const std::string& n, Args& a) { return string_method(o.str(), n, a); });
  } else if (obj.is_mapping()) {
    if (name == "get" || name == "items" || name == "keys" || name == "values") return bind(dict_method);
    if (name == "dictsort")
      return make_fn(
          name, [obj](Evaluator& ev, const ScopePtr&, Args& a) { return apply_filter(ev, "dictsort", obj, a, true); });
  } else if (obj.is_list()) {
    if (name == "length") return Value(static_cast<int64_t>(obj.list().size()));
    if (name == "append" || name == "pop") return bind(list_method);
  }
  return Value();
}

bool apply_test(const std::string& name, const Value& v, const Args& args) {
  auto other = [&]() -> const Value& { return arg(args, 0, name.c_str()); };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "callable") return v.is_callable();
  if (name == "mapping") return v.is_mapping();
  if (name == "iterable") return v.is_list() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is_mapping();
  if (name == "lower") return v.is_string() && v.str() == ascii_lower(v.str());
  if (name == "upper") return v.is_string() && v.str() == ascii_upper(v.str());
  if (name == "odd" || name == "even") {
    if (!v.is_int()) throw RenderError("cannot test " + name + " on a " + v.type_name());
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value& d = other();
    if (!v.is_int() || !d.is_int() || d.as_int() == 0) throw RenderError("divisibleby needs non-zero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==") return strict_equal(v, other());
  if (name == "ne" || name == "!=") return !strict_equal(v, other());
  if (name == "sameas") return strict_equal(v, other());
  if (name == "in") {
    const Value& c = other();
    if (c.is_list()) {
      for (const Value& x : c.list())
        if (strict_equal(x, v)) return true;
      return false;
    }
    if (c.is_string() && v.is_string()) return c.str().find(v.str()) != std::string::npos;
    if (c.is_mapping() && v.is_string()) return c.dict_ref().find(v.str()) != nullptr;
    throw RenderError("'in' test needs a container");
  }
  for (auto [n, op] : {std::pair{"lt", 0}, {"le", 1}, {"gt", 2}, {"ge", 3}, {"lessthan", 0}, {"greaterthan", 2}}) {
    if (name != n) continue;
    const Value& o = other();
    if (!v.is_number() || !o.is_number()) throw RenderError("comparison tests need numbers");
    const double a = v.as_number(), b = o.as_number();
    return op == 0 ? a < b : op == 1 ? a <= b : op == 2 ? a > b : a >= b;
  }
  throw RenderError("unknown test '" + name + "'");
}

namespace {

Value range_fn(Evaluator& ev, const ScopePtr&, Args& a) {
  for (const Value& v : a.pos)
    if (!v.is_int()) throw RenderError("range() arguments must be integers");
  if (a.pos.empty() || a.pos.size() > 3) throw RenderError("range() takes 1 to 3 arguments");
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = a.pos[0].as_int();
  } else {
    start = a.pos[0].as_int();
    stop = a.pos[1].as_int();
    if (a.pos.size() == 3) step = a.pos[2].as_int();
  }
  if (step == 0) throw RenderError("range() step must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    ev.charge(1);
    out.emplace_back(i);
  }
  return Value(std::move(out));
}

Value namespace_fn(Evaluator&, const ScopePtr&, Args& a) {
  auto d = std::make_shared<Dict>();
  d->is_namespace = true;
  if (a.pos.size() > 1) throw RenderError("namespace() takes at most 1 positional argument");
  if (a.pos.size() == 1) {
    const Value& src = a.pos[0];
    if (src.is_mapping()) {
      for (const auto& [k, v] : src.dict_ref().entries) d->set(k, v);
    } else if (src.is_list()) {
      for (const Value& pair : src.list()) {
        if (!pair.is_list() || pair.list().size() != 2 || !pair.list()[0].is_string())
          throw RenderError("namespace() expects a mapping or [key, value] pairs");
        d->set(pair.list()[0].str(), pair.list()[1]);
      }
    } else {
      throw RenderError(std::string("namespace() cannot take a ") + src.type_name());
    }
  }
  for (const auto& [k, v] : a.kw) d->set(k, v);
  return Value(d);
}

// The date formats chat templates use; others stay as written.
std::string strftime_now(const std::string& fmt) {
  static const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                  "July",    "August",   "September", "October", "November", "December"};
  static const char* kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  auto pad2 = [](int n) {
    std::string s = std::to_string(n);
    return n < 10 ? "0" + s : s;
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 == fmt.size()) {
      out += fmt[i];
      continue;
    }
    const char c = fmt[++i];
    switch (c) {
      case 'Y': out += std::to_string(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'b': out += std::string(kMonths[tm.tm_mon]).substr(0, 3); break;
      case 'B': out += kMonths[tm.tm_mon]; break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      case 'A': out += kDays[tm.tm_wday]; break;
      case 'a': out += std::string(kDays[tm.tm_wday]).substr(0, 3); break;
      case '%': out += '%'; break;
      default: out += '%'; out += c;
    }
  }
  return out;
}

}  // namespace

void install_globals(Scope& scope) {
  scope.set("true", Value(true));
  scope.set("false", Value(false));
  scope.set("none", Value::none());
  scope.set("True", Value(true));
  scope.set("False", Value(false));
  scope.set("None", Value::none());
  scope.set("range", make_fn("range", range_fn));
  scope.set("namespace", make_fn("namespace", namespace_fn));
  scope.set("raise_exception", make_fn("raise_exception", [](Evaluator&, const ScopePtr&, Args& a) -> Value {
              throw RenderError(a.pos.empty() ? std::string("undefined") : to_concat(a.pos[0]));
            }));
  scope.set("strftime_now", make_fn("strftime_now", [](Evaluator&, const ScopePtr&, Args& a) {
              return Value(strftime_now(str_arg(arg(a, 0, "strftime_now"), "strftime_now format")));
            }));
  scope.set("dict", make_fn("dict", [](Evaluator&, const ScopePtr&, Args& a) {
              auto d = std::make_shared<Dict>();
              if (!a.pos.empty() && a.pos[0].is_mapping()) *d = a.pos[0].dict_ref();
              for (const auto& [k, v] : a.kw) d->set(k, v);
              return Value(d);
            }));
}

}  // namespace pagoda::jinja
