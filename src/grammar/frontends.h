// The grammar front ends. Each turns a user's text into a finished Grammar
// (grammar.h) or throws InvalidArgument naming what is wrong (with a byte
// offset where there is one). Every one checks GrammarLimits.
//
//   GBNF        llama.cpp's format: `name ::= alternatives`, literals "..."
//               with \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH escapes (code
//               points, encoded as UTF-8), classes [a-z] [^...], `.` (any code
//               point, newline included), grouping ( ), postfix * + ? {m}
//               {m,} {m,n} {,n}, # comments. A rule runs until the next
//               `name ::=`, so alternatives may span lines. `root` is the start.
//   regex       the JSON Schema `pattern` / vLLM `regex` dialect, matched
//               against the WHOLE output (as vLLM's guided regex, and as
//               `pattern` is applied here: see json_schema.cpp): literals,
//               classes, \d \w \s \D \W \S, `.` (any code point but \n \r),
//               groups (capturing, (?:...), (?<name>...)), |, * + ? {m,n}
//               (lazy forms allowed: same language), ^ at the start and $ at
//               the end only. Backreferences, lookaround, \b, \B and inline
//               flags are InvalidArgument naming them.
//   JSON Schema see json_schema.cpp's header comment for the keywords.
//   JSON        the built-in grammar for response_format json_object: one
//               JSON object; between tokens nothing, one space, or one
//               newline and up to 20 spaces / tabs (so output cannot stall
//               in whitespace). JSON Schema's any_whitespace uses the same.
//   choice      exactly one of a list of strings (non-empty list).
//   tagged      one or more JSON values, each inside literal markup (a
//               model's own tool-call format): a JSON object
//                 {"begin": B, "end": E, "separator": S, "max": N,
//                  "items": [{"begin": b, "schema": {..}, "end": e}, ..]}
//               means B ITEM (S ITEM){0,N-1} E, where ITEM is one of the
//               items: b, a value of its JSON Schema, e. Strings default to
//               "", max to unbounded; items must be non-empty. The schemas
//               compile as the JSON Schema front end's (same options).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace pagoda::grammar {

Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits = {});

Grammar compile_regex(std::string_view pattern, const GrammarLimits& limits = {});
// The regex as an expression in `b`; with json_string, characters are
// written as they must appear inside a JSON string (escaped where needed).
Expr regex_expr(GrammarBuilder& b, std::string_view pattern, bool json_string);

struct JsonSchemaOptions {
  bool strict = true;           // an unsupported keyword is InvalidArgument; else ignored and listed
  bool any_whitespace = false;  // false: compact output ({"a":1,"b":[2]}); true: whitespace allowed between tokens
  GrammarLimits limits;
};
struct JsonSchemaGrammar {
  Grammar grammar;
  std::vector<std::string> ignored;  // non-strict: keywords ignored (JSON pointer + name), for the caller to log
};
JsonSchemaGrammar compile_json_schema(std::string_view schema, const JsonSchemaOptions& options = {});
// The schema as an expression in `b` (tagged's items); ignored keywords are appended.
Expr json_schema_expr(GrammarBuilder& b, std::string_view schema, const JsonSchemaOptions& options,
                      std::vector<std::string>& ignored);
JsonSchemaGrammar compile_tagged(std::string_view body, const JsonSchemaOptions& options = {});

// Rules for any JSON value in `b` (shared by the built-in grammar and JSON
// Schema's `{}` / additionalProperties: true). Returns the value rule.
uint32_t add_json_value_rules(GrammarBuilder& b, bool any_whitespace);
Grammar builtin_json_object_grammar(const GrammarLimits& limits = {});

Grammar compile_choice(const std::vector<std::string>& choices, const GrammarLimits& limits = {});

}  // namespace pagoda::grammar
