// The parser: tokens -> a tree of statements (ast.h), the grammar and
// operator precedence of @huggingface/jinja (loosest first): `a if b else c`,
// or, and, not, comparisons and (not) in, + - ~, * / // %, **, `is` tests,
// `|` filters, unary sign, calls/members/subscripts, literals.
//
// Statements: if/elif/else, for (tuple targets, `if` filter, else), set
// (names, tuples, `ns.attr`, block form), macro (defaults), call blocks
// (with caller parameters), filter blocks, break, continue; comments skipped.
// Tests may take arguments as in Python's Jinja (`is divisibleby(3)`,
// `is equalto x`).
//
// Nesting depth is limited (max_depth) so hostile text cannot exhaust the
// stack; errors are SyntaxError naming the line.
#pragma once

#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

std::vector<NodePtr> parse(const std::vector<Token>& tokens, int max_depth);

}  // namespace pagoda::jinja
