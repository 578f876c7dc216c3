// GBNF parser: recursive descent over the text, straight into Expr trees.
#include <cctype>

#include "grammar/frontends.h"
#include "grammar/utf8_class.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

class GbnfParser {
 public:
  GbnfParser(std::string_view text, GrammarBuilder& b) : s_(text), b_(b) {}

  void parse() {
    skip_space();
    while (pos_ < s_.size()) {
      const std::string name = parse_name();
      skip_space();
      if (s_.substr(pos_, 3) != "::=") error("expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      const uint32_t r = b_.rule(name);
      if (b_.defined(r)) error("rule '" + name + "' is defined twice");
      b_.define(r, parse_alternatives(0));
      skip_space();
    }
  }

 private:
  [[noreturn]] void error(const std::string& what) const { fail<InvalidArgument>("GBNF: {} at byte {}", what, pos_); }

  void skip_space() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) { return std::isalnum(uint8_t(c)) || c == '-' || c == '_'; }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    if (pos_ == start) error("expected a rule name");
    return std::string(s_.substr(start, pos_ - start));
  }

  // Whether a new rule (`name ::=`) starts here.
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < s_.size() && name_char(s_[p])) ++p;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) ++p;
    return s_.substr(p, 3) == "::=";
  }

  Expr parse_alternatives(uint32_t depth) {
    if (depth > b_.limits().max_depth) error("nesting deeper than " + std::to_string(b_.limits().max_depth));
    std::vector<Expr> alts;
    alts.push_back(parse_sequence(depth));
    while (pos_ < s_.size() && s_[pos_] == '|') {
      ++pos_;
      alts.push_back(parse_sequence(depth));
    }
    return Expr::alt(std::move(alts));
  }

  Expr parse_sequence(uint32_t depth) {
    std::vector<Expr> items;
    for (;;) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] == '|' || s_[pos_] == ')' || at_rule_start()) break;
      Expr item = parse_primary(depth);
      items.push_back(parse_postfix(std::move(item)));
    }
    return Expr::seq(std::move(items));
  }

  Expr parse_primary(uint32_t depth) {
    const char c = s_[pos_];
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return CodepointSet::all().to_expr();
    }
    if (c == '(') {
      ++pos_;
      Expr e = parse_alternatives(depth + 1);
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ')') error("expected ')'");
      ++pos_;
      return e;
    }
    if (c == '<') error("token references (<...>) are not supported");
    if (name_char(c)) return Expr::ref(b_.rule(parse_name()));
    error(std::string("unexpected character '") + c + "'");
  }

  Expr parse_postfix(Expr e) {
    for (;;) {
      if (pos_ >= s_.size()) return e;
      const char c = s_[pos_];
      if (c == '*')
        ++pos_, e = Expr::star(std::move(e));
      else if (c == '+')
        ++pos_, e = Expr::plus(std::move(e));
      else if (c == '?')
        ++pos_, e = Expr::optional(std::move(e));
      else if (c == '{')
        e = parse_braces(std::move(e));
      else
        return e;
    }
  }

  uint32_t parse_int() {
    uint64_t v = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(uint8_t(s_[pos_]))) {
      v = v * 10 + uint64_t(s_[pos_++] - '0');
      if (v > b_.limits().max_repeat)
        error("repetition bound exceeds the limit " + std::to_string(b_.limits().max_repeat));
    }
    if (pos_ == start) error("expected a number");
    return uint32_t(v);
  }

  Expr parse_braces(Expr e) {
    ++pos_;
    skip_space();
    uint32_t min = 0, max = Expr::kUnbounded;
    if (pos_ < s_.size() && s_[pos_] != ',') min = parse_int();
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ',') {
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] != '}') max = parse_int();
    } else {
      max = min;
    }
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != '}') error("expected '}'");
    ++pos_;
    if (max != Expr::kUnbounded && max < min) error("repetition has max < min");
    return Expr::repeat(std::move(e), min, max);
  }

  uint32_t parse_hex(size_t n) {
    if (const auto v = read_hex(s_, pos_, n)) return *v;
    error("bad hex escape");
  }

  // One code point of a literal or class, escapes resolved.
  uint32_t parse_char() {
    if (pos_ >= s_.size()) error("unterminated literal or class");
    if (s_[pos_] != '\\') {
      std::string tmp(s_.substr(pos_, std::min<size_t>(4, s_.size() - pos_)));
      size_t i = 0;
      const uint32_t cp = utf8_next(tmp, i, "GBNF");
      pos_ += i;
      return cp;
    }
    if (++pos_ >= s_.size()) error("unterminated escape");
    const char c = s_[pos_++];
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^': return uint32_t(c);
      case 'x': return parse_hex(2);
      case 'u': return parse_hex(4);
      case 'U': {
        const uint32_t v = parse_hex(8);
        if (v > CodepointSet::kMax) error("code point out of range");
        return v;
      }
      default: error(std::string("unknown escape '\\") + c + "'");
    }
  }

  Expr parse_literal() {
    ++pos_;
    std::string bytes;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      const uint32_t cp = parse_char();
      if (cp >= 0xD800 && cp <= 0xDFFF) error("surrogate code point in literal");
      bytes += utf8_encode(cp);
    }
    if (pos_ >= s_.size()) error("unterminated literal");
    ++pos_;
    return Expr::literal(bytes);
  }

  Expr parse_class() {
    ++pos_;
    const bool negate = pos_ < s_.size() && s_[pos_] == '^';
    if (negate) ++pos_;
    CodepointSet set;
    while (pos_ < s_.size() && s_[pos_] != ']') {
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) error("class range out of order");
      }
      set.add(lo, hi);
    }
    if (pos_ >= s_.size()) error("unterminated class");
    ++pos_;
    return (negate ? set.negated() : set).to_expr();
  }

  std::string_view s_;
  size_t pos_ = 0;
  GrammarBuilder& b_;
};

}  // namespace

Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits) {
  if (text.size() > limits.max_input_bytes)
    fail<InvalidArgument>("GBNF grammar of {} bytes exceeds the limit of {}", text.size(), limits.max_input_bytes);
  GrammarBuilder b(limits);
  GbnfParser(text, b).parse();
  const uint32_t root = b.rule("root");
  if (!b.defined(root)) fail<InvalidArgument>("GBNF: no 'root' rule");
  return b.finish(root);
}

}  // namespace pagoda::grammar
