// The evaluator: walks the tree (ast.h) over a chain of scopes and writes
// the output. Semantics are @huggingface/jinja's (see value.h): a `for` body
// and a macro body run in a scope of their own, `set` writes the current
// scope (a `set` inside a loop does not leak out; use namespace()), macros see
// the scope they are called from, a call block's `caller` the scope of the
// call block.
//
// Every step is charged against Limits (template.h): steps (nodes evaluated,
// loop iterations, values copied), output bytes, and depth (nested
// expressions, statements and macro calls), so a runaway template ends with
// LimitExceeded instead of hanging or overflowing the stack.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace pagoda::jinja {

struct Limits {
  size_t max_template_bytes = 1 << 20;  // the template text
  size_t max_output_bytes = 4 << 20;    // any one rendered string, the result included
  uint64_t max_steps = 20'000'000;      // evaluation work, about 1 s of CPU at most
  int max_depth = 128;                  // nesting of statements/expressions plus macro calls
};

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars[name] = std::move(v); }
  static std::shared_ptr<Scope> child(const std::shared_ptr<Scope>& parent);
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { normal, break_, continue_ };

class Evaluator {
 public:
  explicit Evaluator(const Limits& limits) : limits_(limits) {}

  std::string render(const std::vector<NodePtr>& program, const ScopePtr& globals);

  Value eval(const Node& n, const ScopePtr& scope);
  Flow exec(const std::vector<NodePtr>& body, const ScopePtr& scope, std::string& out);
  Value call(const Value& fn, Args& args, const ScopePtr& scope);
  Args eval_args(const std::vector<Arg>& args, const ScopePtr& scope);

  // Charges `work` steps (LimitExceeded past max_steps) and checks an output size.
  void charge(uint64_t work);
  void append(std::string& out, std::string_view text);
  const Limits& limits() const { return limits_; }

 private:
  struct Depth;
  const Limits limits_;
  uint64_t steps_ = 0;
  int depth_ = 0;

  Flow exec_one(const Node& n, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Node& n, const ScopePtr& scope, std::string& out);
  void exec_set(const Node& n, const ScopePtr& scope);
  Value make_macro(const Node& n, const std::vector<Param>& params, const std::vector<NodePtr>& body,
                   const ScopePtr& lexical);
  void bind_params(const std::vector<Param>& params, Args& args, const ScopePtr& scope);
  Value eval_binary(const Node& n, const ScopePtr& scope);
  Value eval_member(const Node& n, const ScopePtr& scope);
  Value eval_slice(const Node& n, const ScopePtr& scope);
  Value eval_unary(const Node& n, const ScopePtr& scope);
};

// Built-ins: filters (filters.cpp), tests, methods and globals (builtins.cpp).
Value apply_filter(Evaluator& ev, const std::string& name, const Value& operand, Args& args, bool called);
bool apply_test(const std::string& name, const Value& v, const Args& args);
// obj.name for values that are not dicts with that key: methods and properties.
Value builtin_member(const Value& obj, const std::string& name);
void install_globals(Scope& scope);
// Python-style slice of n items; the indexes taken.
std::vector<size_t> slice_indexes(size_t n, const Value& start, const Value& stop, const Value& step);

}  // namespace pagoda::jinja
