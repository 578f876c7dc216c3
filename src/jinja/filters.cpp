// Filters (`x | name(args)`), with @huggingface/jinja's behaviour for the
// ones it has and Python Jinja's for the few Python-only ones added
// (select/reject, map to a filter, round, wordcount, batch, count, d).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "jinja/error.h"
#include "jinja/eval.h"
#include "jinja/lexer.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void cannot(const std::string& name, const Value& v) {
  throw RenderError("cannot apply filter '" + name + "' to a " + v.type_name());
}

bool bool_arg(const Args& a, size_t i, const char* name, bool def) {
  const Value* v = a.get(i, name);
  if (!v || v->is_undefined()) return def;
  if (!v->is_bool()) throw RenderError(std::string(name) + " must be a boolean");
  return v->as_bool();
}

// Orders two values as sort and dictsort do: numbers (bools as 0/1) and strings.
int compare(const Value& a, const Value& b, bool case_sensitive) {
  if ((a.is_none() && b.is_none()) || (a.is_undefined() && b.is_undefined())) return 0;
  const bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (an && bn) return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number() ? 1 : 0;
  if (a.is_string() && b.is_string()) {
    const std::string x = case_sensitive ? a.str() : ascii_lower(a.str());
    const std::string y = case_sensitive ? b.str() : ascii_lower(b.str());
    return x < y ? -1 : x > y ? 1 : 0;
  }
  throw RenderError(std::string("cannot compare a ") + a.type_name() + " with a " + b.type_name());
}

// item.a.b (dotted; digits index lists), undefined where absent.
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string part = path.substr(start, dot - start);
    if (v.is_dict()) {
      const Value* f = v.dict_ref().find(part);
      v = f ? *f : Value();
    } else if (v.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = std::strtoull(part.c_str(), nullptr, 10);
      v = i < v.list().size() ? v.list()[i] : Value();
    } else {
      return Value();
    }
    start = dot + 1;
  }
  return v;
}

JsonOptions json_options(const Args& a) {
  JsonOptions o;
  if (const Value* v = a.kwarg("indent"); v && !v->is_none()) {
    if (!v->is_int()) throw RenderError("tojson indent must be an integer");
    o.indent = static_cast<int>(std::clamp<int64_t>(v->as_int(), -1, 64));
  }
  o.ensure_ascii = bool_arg(Args{{}, a.kw}, 99, "ensure_ascii", false);
  o.sort_keys = bool_arg(Args{{}, a.kw}, 99, "sort_keys", false);
  if (const Value* v = a.kwarg("separators"); v && !v->is_none()) {
    if (!v->is_list() || v->list().size() != 2 || !v->list()[0].is_string() || !v->list()[1].is_string())
      throw RenderError("tojson separators must be a pair of strings");
    o.separators = std::pair{v->list()[0].str(), v->list()[1].str()};
  }
  return o;
}

Value to_int(const Value& v, const Args& a, bool as_float) {
  const Value* def = a.get(0, "default");
  const Value fallback = def ? *def : as_float ? Value(0.0) : Value(int64_t{0});
  if (v.is_int()) return as_float ? Value(static_cast<double>(v.as_int())) : v;
  if (v.is_float()) return as_float ? v : Value(static_cast<int64_t>(std::floor(v.as_float())));
  if (v.is_bool()) return as_float ? Value(v.as_bool() ? 1.0 : 0.0) : Value(int64_t{v.as_bool()});
  if (!v.is_string()) cannot(as_float ? "float" : "int", v);
  const std::string s(js_trim_start(v.str()));
  char* end = nullptr;
  if (as_float) {
    const double d = std::strtod(s.c_str(), &end);
    return end == s.c_str() ? fallback : Value(d);
  }
  const long long i = std::strtoll(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : Value(static_cast<int64_t>(i));
}

std::string join_text(const Value& v) { return v.is_none() || v.is_undefined() ? "" : to_concat(v); }

Value indent(const std::string& s, const Args& a) {
  const Value* w = a.get(0, "width");
  std::string pad = "    ";
  if (w && w->is_int())
    pad = std::string(std::clamp<int64_t>(w->as_int(), 0, 1024), ' ');
  else if (w && w->is_string())
    pad = w->str();
  else if (w)
    throw RenderError("indent width must be a number");
  const bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
  std::string out;
  size_t start = 0;
  for (int line = 0;; ++line) {
    size_t nl = s.find('\n', start);
    const std::string_view part =
        std::string_view(s).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((line > 0 || first) && (blank || !part.empty())) out += pad;
    out += part;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value(std::move(out));
}

Value select_items(Evaluator& ev, const std::string& name, const Value& v, Args& a) {
  if (!v.is_list()) cannot(name, v);
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep = name == "selectattr" || name == "select";
  size_t i = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty() || !a.pos[0].is_string()) throw RenderError(name + " needs an attribute name");
    attr = a.pos[i++].str();
  }
  std::string test;
  if (i < a.pos.size()) {
    if (!a.pos[i].is_string()) throw RenderError(name + " test name must be a string");
    test = a.pos[i++].str();
  }
  Args test_args;
  test_args.pos.assign(a.pos.begin() + i, a.pos.end());
  List out;
  for (const Value& item : v.list()) {
    ev.charge(1);
    bool pass;
    if (by_attr) {
      if (!item.is_dict()) throw RenderError(name + " can only be applied to a list of objects");
      const Value* x = item.dict_ref().find(attr);
      pass = x && (test.empty() ? x->truthy() : apply_test(test, *x, test_args));
    } else {
      pass = test.empty() ? item.truthy() : apply_test(test, item, test_args);
    }
    if (pass == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value map_items(Evaluator& ev, const Value& v, Args& a) {
  if (!v.is_list()) cannot("map", v);
  List out;
  if (const Value* attr = a.kwarg("attribute")) {
    if (!attr->is_string()) throw RenderError("map attribute must be a string");
    const Value* def = a.kwarg("default");
    for (const Value& item : v.list()) {
      ev.charge(1);
      if (!item.is_dict()) throw RenderError("map(attribute=...) needs a list of objects");
      Value x = attribute_path(item, attr->str());
      out.push_back(x.is_undefined() && def ? *def : x);
    }
    return Value(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) throw RenderError("map needs attribute= or a filter name");
  const std::string filter = a.pos[0].str();
  Args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& item : v.list()) out.push_back(apply_filter(ev, filter, item, rest, true));
  return Value(std::move(out));
}

Value sort_items(const Value& v, const Args& a) {
  if (!v.is_list()) cannot("sort", v);
  const bool reverse = bool_arg(a, 0, "reverse", false), cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attr = a.get(2, "attribute");
  List out = v.list();
  auto key = [&](const Value& x) {
    if (!attr || attr->is_none()) return x;
    return attribute_path(x, attr->is_int() ? std::to_string(attr->as_int()) : attr->str());
  };
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
    const int c = compare(key(x), key(y), cs);
    return reverse ? c > 0 : c < 0;
  });
  return Value(std::move(out));
}

Value dictsort(const Value& v, const Args& a) {
  if (!v.is_mapping()) cannot("dictsort", v);
  const bool cs = bool_arg(a, 0, "case_sensitive", false), reverse = bool_arg(a, 2, "reverse", false);
  const Value* by = a.get(1, "by");
  const bool by_value = by && by->is_string() && by->str() == "value";
  if (by && (!by->is_string() || (by->str() != "key" && by->str() != "value")))
    throw RenderError("dictsort by must be 'key' or 'value'");
  List out;
  for (const auto& [k, x] : v.dict_ref().entries) out.emplace_back(List{Value(k), x});
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
    const int c = compare(x.list()[by_value], y.list()[by_value], cs);
    return reverse ? c > 0 : c < 0;
  });
  return Value(std::move(out));
}

Value unique(const Value& v) {
  if (!v.is_list()) cannot("unique", v);
  List out;
  for (const Value& x : v.list()) {
    bool seen = false;
    for (const Value& y : out) seen = seen || strict_equal(x, y);
    if (!seen) out.push_back(x);
  }
  return Value(std::move(out));
}

Value length(const std::string& name, const Value& v) {
  if (v.is_list()) return Value(static_cast<int64_t>(v.list().size()));
  if (v.is_string()) return Value(static_cast<int64_t>(utf16_length(v.str())));
  if (v.is_mapping()) return Value(static_cast<int64_t>(v.dict_ref().entries.size()));
  cannot(name, v);
}

Value string_filter(const std::string& name, const Value& v, const Args& a) {
  if (!v.is_string()) cannot(name, v);
  const std::string& s = v.str();
  if (name == "upper") return Value(ascii_upper(s));
  if (name == "lower") return Value(ascii_lower(s));
  if (name == "title") return Value(title_case(s));
  if (name == "capitalize") return Value(s.empty() ? s : ascii_upper(s.substr(0, 1)) + s.substr(1));
  if (name == "trim") return Value(strip_chars(s, a.pos.empty() ? "" : a.pos[0].str(), true, true));
  if (name == "indent") return indent(s, a);
  if (name == "wordcount") return Value(static_cast<int64_t>(split(s, nullptr, -1).size()));
  if (name == "replace") {
    if (a.pos.size() < 2 || !a.pos[0].is_string() || !a.pos[1].is_string())
      throw RenderError("replace needs two strings");
    const Value* count = a.get(2, "count");
    return Value(replace_all(s, a.pos[0].str(), a.pos[1].str(), count && count->is_int() ? count->as_int() : -1));
  }
  cannot(name, v);
}

}  // namespace

Value apply_filter(Evaluator& ev, const std::string& name, const Value& v, Args& a, bool called) {
  ev.charge(v.is_list() ? v.list().size() + 1 : 1);
  if (name == "safe") return v;
  if (name == "tojson") return Value(to_json(v, called ? json_options(a) : JsonOptions{}));
  if (name == "default" || name == "d") {
    const Value* def = a.get(0, "default_value");
    const bool boolean = bool_arg(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return def ? *def : Value("");
    return v;
  }
  if (name == "length" || name == "count") return length(name, v);
  if (name == "first" || name == "last") {
    if (v.is_string()) {
      const auto pts = code_points(v.str());
      return pts.empty() ? Value() : Value(name == "first" ? pts.front() : pts.back());
    }
    if (!v.is_list()) cannot(name, v);
    if (v.list().empty()) return Value();
    return name == "first" ? v.list().front() : v.list().back();
  }
  if (name == "list") {
    if (v.is_list()) return v;
    List out;
    if (v.is_string())
      for (auto& p : code_points(v.str())) out.emplace_back(std::move(p));
    else if (v.is_mapping())
      for (const auto& [k, _] : v.dict_ref().entries) out.emplace_back(k);
    else
      cannot(name, v);
    return Value(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto pts = code_points(v.str());
      std::string out;
      for (auto it = pts.rbegin(); it != pts.rend(); ++it) out += *it;
      return Value(std::move(out));
    }
    if (!v.is_list()) cannot(name, v);
    return Value(List(v.list().rbegin(), v.list().rend()));
  }
  if (name == "join") {
    const Value* sep = a.get(0, "separator");
    if (sep && !sep->is_string()) throw RenderError("join separator must be a string");
    const Value items = v.is_string() ? apply_filter(ev, "list", v, a, false) : v;
    if (!items.is_list()) cannot(name, v);
    std::string out;
    for (size_t i = 0; i < items.list().size(); ++i) {
      if (i && sep) out += sep->str();
      out += join_text(items.list()[i]);
      if (out.size() > ev.limits().max_output_bytes) throw LimitExceeded("join result too large");
    }
    return Value(std::move(out));
  }
  if (name == "string") {
    if (v.is_none()) return Value("None");
    return Value(to_output(v));
  }
  if (name == "int" || name == "float") return to_int(v, a, name == "float");
  if (name == "bool") return Value(v.truthy());
  if (name == "abs") {
    if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    cannot(name, v);
  }
  if (name == "round") {
    if (!v.is_number()) cannot(name, v);
    const Value* p = a.get(0, "precision");
    const double scale = std::pow(10.0, p && p->is_int() ? static_cast<double>(p->as_int()) : 0.0);
    return Value(std::round(v.as_number() * scale) / scale);
  }
  if (name == "items") {
    if (!v.is_mapping()) cannot(name, v);
    Args none;
    return builtin_member(v, "items").callable().fn(ev, nullptr, none);
  }
  if (name == "unique") return unique(v);
  if (name == "sort") return sort_items(v, a);
  if (name == "dictsort") return dictsort(v, a);
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject")
    return select_items(ev, name, v, a);
  if (name == "map") return map_items(ev, v, a);
  if (name == "batch") {
    if (!v.is_list() || a.pos.empty() || !a.pos[0].is_int() || a.pos[0].as_int() <= 0) cannot(name, v);
    List out;
    const size_t n = static_cast<size_t>(a.pos[0].as_int());
    for (size_t i = 0; i < v.list().size(); i += n)
      out.emplace_back(List(v.list().begin() + i, v.list().begin() + std::min(i + n, v.list().size())));
    return Value(std::move(out));
  }
  return string_filter(name, v, a);
}

}  // namespace pagoda::jinja
