// The Jinja lexer: template text -> tokens, with Hugging Face's whitespace
// rules. apply_chat_template compiles with trim_blocks=True and
// lstrip_blocks=True, and @huggingface/jinja applies them as text rewrites
// before lexing (one trailing newline of the template dropped; blanks before
// a `{%`/`{#` at a line start removed; the newline after `%}`/`#}` removed;
// `{% generation %}` markers removed), then `{%-`/`-%}` (and the `{{`/`{#`
// forms) trim the whitespace beside the tag. "Whitespace" is JavaScript's \s
// (Unicode spaces included), decoded from UTF-8.
//
// Numbers after an operator or opening bracket carry their sign (`[-1]`), as
// in @huggingface/jinja; `a - 1` stays a subtraction.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

enum class Tok {
  text,
  comment,
  open_statement,    // {%
  close_statement,   // %}
  open_expression,   // {{
  close_expression,  // }}
  number,
  string,
  identifier,
  equals,
  lparen,
  rparen,
  lbracket,
  rbracket,
  lbrace,
  rbrace,
  comma,
  dot,
  colon,
  pipe,
  additive,        // + - ~
  multiplicative,  // * / // %
  power,           // **
  comparison,      // < > <= >= == !=
  unary,           // a lone + or - where an operand starts
};

struct Token {
  Tok type;
  std::string value;
  int line = 1;
};

// Whitespace as JavaScript's \s: byte length of the space at s[i], or 0.
size_t js_space_at(std::string_view s, size_t i);
// s without trailing / leading JavaScript whitespace.
std::string_view js_trim_end(std::string_view s);
std::string_view js_trim_start(std::string_view s);

// Throws SyntaxError (with the line) on text the lexer cannot read.
std::vector<Token> tokenize(std::string_view source);

}  // namespace pagoda::jinja
