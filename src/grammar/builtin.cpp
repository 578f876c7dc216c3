// The built-in JSON grammar (RFC 8259 values) and `choice`.
#include "grammar/frontends.h"
#include "grammar/utf8_class.h"
#include "util/error.h"

namespace pagoda::grammar {

namespace {

// Whitespace between JSON tokens: nothing in compact mode, else one space or
// one newline and an indent of at most 20 spaces / tabs (as llama.cpp's JSON
// grammar), so a model cannot run to max_tokens inside whitespace.
Expr ws(GrammarBuilder& b, bool any_whitespace) {
  if (!any_whitespace) return Expr::empty();
  const uint32_t r = b.rule("ws");
  if (!b.defined(r)) {
    ByteSet indent;
    for (char c : {' ', '\t'}) indent.set(uint8_t(c));
    b.define(r,
             Expr::optional(Expr::alt(
                 {Expr::literal(" "), Expr::seq({Expr::literal("\n"), Expr::repeat(Expr::byte_set(indent), 0, 20)})})));
  }
  return Expr::ref(r);
}

}  // namespace

uint32_t add_json_value_rules(GrammarBuilder& b, bool any_whitespace) {
  const uint32_t value = b.rule("json-value");
  if (b.defined(value)) return value;
  const uint32_t object = b.rule("json-object"), array = b.rule("json-array"), string = b.rule("json-string"),
                 number = b.rule("json-number");
  auto W = [&] { return ws(b, any_whitespace); };
  auto lit = [](const char* s) { return Expr::literal(s); };
  b.define(value, Expr::alt({Expr::ref(object), Expr::ref(array), Expr::ref(string), Expr::ref(number), lit("true"),
                             lit("false"), lit("null")}));
  auto member = [&] { return Expr::seq({Expr::ref(string), W(), lit(":"), W(), Expr::ref(value), W()}); };
  b.define(object, Expr::seq({lit("{"), W(),
                              Expr::optional(Expr::seq({member(), Expr::star(Expr::seq({lit(","), W(), member()}))})),
                              lit("}")}));
  auto element = [&] { return Expr::seq({Expr::ref(value), W()}); };
  b.define(array, Expr::seq({lit("["), W(),
                             Expr::optional(Expr::seq({element(), Expr::star(Expr::seq({lit(","), W(), element()}))})),
                             lit("]")}));
  b.define(string, Expr::seq({lit("\""), Expr::star(Expr::ref(b.rule("json-char"))), lit("\"")}));
  const uint32_t ch = b.rule("json-char");
  if (!b.defined(ch)) {
    CodepointSet plain = CodepointSet::all();
    CodepointSet special;
    special.add(0, 0x1F), special.add('"', '"'), special.add('\\', '\\');
    ByteSet esc;
    for (char c : std::string_view("\"\\/bfnrt")) esc.set(uint8_t(c));
    ByteSet hex;
    hex.set_range('0', '9'), hex.set_range('a', 'f'), hex.set_range('A', 'F');
    // \u escapes: surrogates only as a high-low pair (parsers refuse lone ones).
    auto hexes = [&](uint32_t n) { return Expr::repeat(Expr::byte_set(hex), n, n); };
    auto set_of = [](std::string_view chars) {
      ByteSet s;
      for (char c : chars) s.set(uint8_t(c));
      return Expr::byte_set(s);
    };
    Expr u = Expr::alt({Expr::seq({set_of("0123456789abcefABCEF"), hexes(3)}),
                        Expr::seq({set_of("dD"), set_of("01234567"), hexes(2)}),
                        Expr::seq({set_of("dD"), set_of("89abAB"), hexes(2), lit("\\u"), set_of("dD"),
                                   set_of("cdefCDEF"), hexes(2)})});
    b.define(
        ch, Expr::alt({plain.minus(special).to_expr(),
                       Expr::seq({lit("\\"), Expr::alt({Expr::byte_set(esc), Expr::seq({lit("u"), std::move(u)})})})}));
  }
  const Expr digit = Expr::byte_set(ByteSet::range('0', '9'));
  b.define(
      number,
      Expr::seq({Expr::optional(lit("-")),
                 Expr::alt({lit("0"), Expr::seq({Expr::byte_set(ByteSet::range('1', '9')), Expr::star(digit)})}),
                 Expr::optional(Expr::seq({lit("."), Expr::plus(digit)})),
                 Expr::optional(Expr::seq({Expr::alt({lit("e"), lit("E")}),
                                           Expr::optional(Expr::alt({lit("-"), lit("+")})), Expr::plus(digit)}))}));
  return value;
}

Grammar builtin_json_object_grammar(const GrammarLimits& limits) {
  GrammarBuilder b(limits);
  add_json_value_rules(b, true);
  const uint32_t root = b.rule("root");
  b.define(root, Expr::ref(b.rule("json-object")));
  return b.finish(root);
}

Grammar compile_choice(const std::vector<std::string>& choices, const GrammarLimits& limits) {
  if (choices.empty()) fail<InvalidArgument>("choice: the list of choices is empty");
  size_t total = 0;
  for (const auto& c : choices) total += c.size();
  if (total > limits.max_input_bytes)
    fail<InvalidArgument>("choice: {} bytes of choices exceed the limit of {}", total, limits.max_input_bytes);
  GrammarBuilder b(limits);
  std::vector<Expr> alts;
  for (const auto& c : choices) alts.push_back(Expr::literal(c));
  const uint32_t root = b.rule("root");
  b.define(root, Expr::alt(std::move(alts)));
  return b.finish(root);
}

}  // namespace pagoda::grammar
