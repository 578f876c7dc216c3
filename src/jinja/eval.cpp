// Statements and expressions.
#include "jinja/eval.h"

#include <cmath>

#include "jinja/error.h"

namespace pagoda::jinja {

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

ScopePtr Scope::child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

struct Evaluator::Depth {
  Evaluator& ev;
  explicit Depth(Evaluator& e) : ev(e) {
    if (++ev.depth_ > ev.limits_.max_depth) {
      --ev.depth_;
      throw LimitExceeded("template recursion too deep (limit " + std::to_string(ev.limits_.max_depth) + ")");
    }
  }
  ~Depth() { --ev.depth_; }
};

void Evaluator::charge(uint64_t work) {
  steps_ += work;
  if (steps_ > limits_.max_steps)
    throw LimitExceeded("template did too much work (limit " + std::to_string(limits_.max_steps) + " steps)");
}

void Evaluator::append(std::string& out, std::string_view text) {
  charge(text.size() / 16);
  if (out.size() + text.size() > limits_.max_output_bytes)
    throw LimitExceeded("template output too large (limit " + std::to_string(limits_.max_output_bytes) + " bytes)");
  out += text;
}

std::string Evaluator::render(const std::vector<NodePtr>& program, const ScopePtr& globals) {
  std::string out;
  if (exec(program, globals, out) != Flow::normal) throw RenderError("break or continue outside a loop");
  return out;
}

Flow Evaluator::exec(const std::vector<NodePtr>& body, const ScopePtr& scope, std::string& out) {
  Depth d(*this);
  for (const NodePtr& n : body) {
    const Flow f = exec_one(*n, scope, out);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Flow Evaluator::exec_one(const Node& n, const ScopePtr& scope, std::string& out) {
  charge(1);
  switch (n.kind) {
    case NodeKind::text: append(out, n.name); return Flow::normal;
    case NodeKind::output: append(out, to_output(eval(*n.a, scope))); return Flow::normal;
    case NodeKind::if_: return exec(eval(*n.a, scope).truthy() ? n.body : n.else_body, scope, out);
    case NodeKind::for_: return exec_for(n, scope, out);
    case NodeKind::set: exec_set(n, scope); return Flow::normal;
    case NodeKind::macro: scope->set(n.name, make_macro(n, n.params, n.body, nullptr)); return Flow::normal;
    case NodeKind::break_: return Flow::break_;
    case NodeKind::continue_: return Flow::continue_;
    case NodeKind::call_block: {
      const Value caller = make_macro(n, n.params, n.body, scope);
      Args args = eval_args(n.a->args, scope);
      const Value fn = eval(*n.a->a, scope);
      auto env = Scope::child(scope);
      env->set("caller", caller);
      append(out, to_output(call(fn, args, env)));
      return Flow::normal;
    }
    case NodeKind::filter_block: {
      std::string body;
      if (exec(n.body, scope, body) != Flow::normal) throw RenderError("break or continue outside a loop");
      Args args = eval_args(n.a->args, scope);
      append(out, to_output(apply_filter(*this, n.a->name, Value(std::move(body)), args, n.a->flag)));
      return Flow::normal;
    }
    default: append(out, to_output(eval(n, scope))); return Flow::normal;
  }
}

namespace {

void bind_targets(const Node& n, const Value& item, Scope& scope) {
  if (!n.flag) {
    scope.set(n.targets[0], item);
    return;
  }
  if (!item.is_list()) throw RenderError(std::string("cannot unpack a ") + item.type_name());
  const List& l = item.list();
  if (l.size() != n.targets.size())
    throw RenderError(std::string("too ") + (l.size() < n.targets.size() ? "few" : "many") + " items to unpack");
  for (size_t i = 0; i < l.size(); ++i) scope.set(n.targets[i], l[i]);
}

// The items a `for` walks: a list's, a dict's keys, a string's characters.
List iteration_items(const Value& v) {
  if (v.is_list()) return v.list();
  List out;
  if (v.is_mapping()) {
    for (const auto& [k, _] : v.dict_ref().entries) out.emplace_back(k);
  } else if (v.is_string()) {
    const std::string& s = v.str();
    for (size_t i = 0; i < s.size();) {
      size_t len = 1;
      const unsigned char c = s[i];
      if (c >= 0xF0)
        len = 4;
      else if (c >= 0xE0)
        len = 3;
      else if (c >= 0xC0)
        len = 2;
      len = std::min(len, s.size() - i);
      out.emplace_back(s.substr(i, len));
      i += len;
    }
  } else {
    throw RenderError(std::string("cannot loop over a ") + v.type_name());
  }
  return out;
}

}  // namespace

Flow Evaluator::exec_for(const Node& n, const ScopePtr& scope, std::string& out) {
  auto loop_scope = Scope::child(scope);
  const Value iterable = eval(*n.a, loop_scope);
  List all = iteration_items(iterable);
  charge(all.size());
  List items;
  if (n.c) {
    for (const Value& item : all) {
      auto test_scope = Scope::child(loop_scope);
      bind_targets(n, item, *test_scope);
      if (eval(*n.c, test_scope).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  bool iterated = false;
  const int64_t len = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < len; ++i) {
    charge(1);
    auto loop = std::make_shared<Dict>();
    loop->set("index", Value(i + 1));
    loop->set("index0", Value(i));
    loop->set("revindex", Value(len - i));
    loop->set("revindex0", Value(len - i - 1));
    loop->set("first", Value(i == 0));
    loop->set("last", Value(i == len - 1));
    loop->set("length", Value(len));
    loop->set("previtem", i > 0 ? items[i - 1] : Value());
    loop->set("nextitem", i < len - 1 ? items[i + 1] : Value());
    loop_scope->set("loop", Value(loop));
    bind_targets(n, items[i], *loop_scope);
    const Flow f = exec(n.body, loop_scope, out);
    if (f == Flow::break_) break;
    if (f == Flow::continue_) continue;
    iterated = true;
  }
  if (!iterated) return exec(n.else_body, loop_scope, out);
  return Flow::normal;
}

void Evaluator::exec_set(const Node& n, const ScopePtr& scope) {
  Value v;
  if (n.a) {
    v = eval(*n.a, scope);
  } else {
    std::string body;
    if (exec(n.body, scope, body) != Flow::normal) throw RenderError("break or continue outside a loop");
    v = Value(std::move(body));
  }
  if (n.b) {  // ns.attr = v
    const Value obj = eval(*n.b->a, scope);
    if (!obj.is_namespace()) throw RenderError("cannot assign an attribute of a non-namespace object");
    obj.dict_ref().set(n.b->name, std::move(v));
    return;
  }
  if (!n.flag) {
    scope->set(n.targets[0], std::move(v));
    return;
  }
  if (!v.is_list()) throw RenderError(std::string("cannot unpack a ") + v.type_name() + " in set");
  const List& l = v.list();
  if (l.size() != n.targets.size()) throw RenderError("wrong number of items to unpack in set");
  for (size_t i = 0; i < l.size(); ++i) scope->set(n.targets[i], l[i]);
}

void Evaluator::bind_params(const std::vector<Param>& params, Args& args, const ScopePtr& scope) {
  std::vector<const Param*> pending;
  auto kwargs = std::make_shared<Dict>();
  for (auto& [k, v] : args.kw) kwargs->set(k, v);
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    const Value* v = i < args.pos.size() ? &args.pos[i] : nullptr;
    Value bound;
    if (v) {
      bound = *v;
    } else if (const Value* kv = kwargs->find(p.name)) {
      bound = *kv;
      std::erase_if(kwargs->entries, [&](const auto& e) { return e.first == p.name; });
    } else if (p.default_value) {
      pending.push_back(&p);
    }
    scope->set(p.name, std::move(bound));
  }
  List extra;
  for (size_t i = params.size(); i < args.pos.size(); ++i) extra.push_back(args.pos[i]);
  scope->set("varargs", Value(std::move(extra)));
  scope->set("kwargs", Value(kwargs));
  for (const Param* p : pending) scope->set(p->name, eval(*p->default_value, scope));
}

Value Evaluator::make_macro(const Node& n, const std::vector<Param>& params, const std::vector<NodePtr>& body,
                            const ScopePtr& lexical) {
  auto c = std::make_shared<Callable>();
  c->name = n.kind == NodeKind::macro ? n.name : "caller";
  // A macro runs in a child of the calling scope; a caller in a child of its call block's scope.
  c->fn = [&params, &body, lexical](Evaluator& ev, const ScopePtr& calling, Args& args) {
    auto scope = Scope::child(lexical ? lexical : calling);
    ev.bind_params(params, args, scope);
    std::string out;
    if (ev.exec(body, scope, out) != Flow::normal) throw RenderError("break or continue outside a loop");
    return Value(std::move(out));
  };
  return Value(c);
}

Value Evaluator::call(const Value& fn, Args& args, const ScopePtr& scope) {
  if (!fn.is_callable()) throw RenderError(std::string("cannot call a ") + fn.type_name());
  Depth d(*this);
  charge(1);
  return fn.callable().fn(*this, scope, args);
}

Args Evaluator::eval_args(const std::vector<Arg>& args, const ScopePtr& scope) {
  Args out;
  for (const Arg& a : args) {
    Value v = eval(*a.value, scope);
    if (a.spread == 1) {
      if (!v.is_list()) throw RenderError(std::string("cannot unpack a ") + v.type_name());
      charge(v.list().size());
      for (const Value& x : v.list()) out.pos.push_back(x);
    } else if (a.spread == 2) {
      if (!v.is_mapping()) throw RenderError(std::string("argument after ** must be a mapping"));
      for (const auto& [k, x] : v.dict_ref().entries) out.kw.emplace_back(k, x);
    } else if (a.name.empty()) {
      out.pos.push_back(std::move(v));
    } else {
      if (out.kwarg(a.name)) throw RenderError("got multiple values for keyword argument '" + a.name + "'");
      out.kw.emplace_back(a.name, std::move(v));
    }
  }
  return out;
}

Value Evaluator::eval(const Node& n, const ScopePtr& scope) {
  Depth d(*this);
  charge(1);
  switch (n.kind) {
    case NodeKind::literal: return n.value;
    case NodeKind::identifier: {
      const Value* v = scope->lookup(n.name);
      return v ? *v : Value();
    }
    case NodeKind::list:
    case NodeKind::tuple: {
      List l;
      for (const NodePtr& item : n.items) l.push_back(eval(*item, scope));
      return Value(std::move(l));
    }
    case NodeKind::dict: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
        const Value k = eval(*n.items[i], scope);
        if (!k.is_string()) throw RenderError(std::string("dict keys must be strings, got a ") + k.type_name());
        d->set(k.str(), eval(*n.items[i + 1], scope));
      }
      return Value(d);
    }
    case NodeKind::member: return eval_member(n, scope);
    case NodeKind::slice: return eval_slice(n, scope);
    case NodeKind::call: {
      Args args = eval_args(n.args, scope);
      return call(eval(*n.a, scope), args, scope);
    }
    case NodeKind::filter: {
      const Value operand = eval(*n.a, scope);
      Args args = eval_args(n.args, scope);
      return apply_filter(*this, n.name, operand, args, n.flag);
    }
    case NodeKind::test: {
      const Value operand = eval(*n.a, scope);
      const Args args = eval_args(n.args, scope);
      return Value(apply_test(n.name, operand, args) != n.flag);
    }
    case NodeKind::unary: return eval_unary(n, scope);
    case NodeKind::binary: return eval_binary(n, scope);
    case NodeKind::ternary: return eval(*n.c, scope).truthy() ? eval(*n.a, scope) : eval(*n.b, scope);
    case NodeKind::select: return eval(*n.c, scope).truthy() ? eval(*n.a, scope) : Value();
    default: throw RenderError("statement used as an expression");
  }
}

Value Evaluator::eval_unary(const Node& n, const ScopePtr& scope) {
  const Value v = eval(*n.a, scope);
  if (n.name == "not") return Value(!v.truthy());
  const int sign = n.name == "-" ? -1 : 1;
  if (v.is_float()) return Value(sign * v.as_float());
  if (v.is_int()) return Value(sign * v.as_int());
  if (v.is_bool()) return Value(int64_t{sign * (v.as_bool() ? 1 : 0)});
  throw RenderError("bad operand for unary " + n.name + ": " + v.type_name());
}

Value Evaluator::eval_member(const Node& n, const ScopePtr& scope) {
  const Value obj = eval(*n.a, scope);
  const Value key = n.b ? eval(*n.b, scope) : Value(n.name);
  if (obj.is_dict()) {
    if (!key.is_string()) throw RenderError(std::string("cannot index a dict with a ") + key.type_name());
    if (const Value* v = obj.dict_ref().find(key.str())) return *v;
    return obj.is_namespace() ? Value() : builtin_member(obj, key.str());
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.is_int()) {
      int64_t i = key.as_int();
      if (obj.is_list()) {
        const int64_t size = static_cast<int64_t>(obj.list().size());
        if (i < 0) i += size;
        return i >= 0 && i < size ? obj.list()[i] : Value();
      }
      Args none;
      const Value chars = apply_filter(*this, "list", obj, none, false);
      const int64_t size = static_cast<int64_t>(chars.list().size());
      if (i < 0) i += size;
      return i >= 0 && i < size ? chars.list()[i] : Value();
    }
    if (key.is_string()) return builtin_member(obj, key.str());
    throw RenderError(std::string("cannot index a ") + obj.type_name() + " with a " + key.type_name());
  }
  if (!key.is_string()) throw RenderError(std::string("cannot index a ") + obj.type_name());
  return builtin_member(obj, key.str());
}

}  // namespace pagoda::jinja
