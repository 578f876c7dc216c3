// The syntax tree the parser builds and the evaluator walks. One Node type
// with a kind and generic slots keeps the tree small to write and to walk;
// each kind's use of the slots is listed beside it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja {

enum class NodeKind {
  // Expressions.
  literal,     // value
  identifier,  // name
  list,        // items
  tuple,       // items
  dict,        // items: key, value, key, value, ...
  member,      // a: object; name (a.name / a.0) or b: index expression (a[b]), flag: computed
  slice,       // a: object; items: start, stop, step (null where absent)
  call,        // a: callee; args
  filter,      // a: operand; name; args (flag: written with parentheses)
  test,        // a: operand; name; args; flag: `is not`
  unary,       // name: "not", "-" or "+"; a
  binary,      // name: the operator ("and", "in", "not in", "+", ...); a, b
  ternary,     // a if c else b
  select,      // a if c (no else): undefined when c is false
  // Statements.
  text,          // name: the text
  output,        // {{ a }}
  if_,           // if a: body, else: else_body (an elif is an if_ inside else_body)
  for_,          // for targets in a [if c]: body, else: else_body; flag: tuple targets
  set,           // targets (or a member target in b) = a, or the rendered body
  macro,         // name; params; body
  call_block,    // a: the call expression; params: caller's; body
  filter_block,  // a: a filter node whose operand is the rendered body
  break_,
  continue_,
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Param {
  std::string name;
  NodePtr default_value;  // null: required
};

struct Arg {
  std::string name;  // "" for a positional argument
  NodePtr value;
  int spread = 0;  // 1: *list, 2: **dict
};

struct Node {
  NodeKind kind;
  int line = 0;
  std::string name;
  Value value;
  NodePtr a, b, c;
  std::vector<NodePtr> items;
  std::vector<Arg> args;
  std::vector<Param> params;
  std::vector<std::string> targets;
  std::vector<NodePtr> body, else_body;
  bool flag = false;
};

}  // namespace pagoda::jinja
