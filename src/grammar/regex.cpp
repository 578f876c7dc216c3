// Regex front end (the dialect in frontends.h): recursive descent into Expr,
// characters as code point sets so classes and negation are UTF-8 aware.
#include <cctype>

#include "grammar/frontends.h"
#include "grammar/utf8_class.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

class RegexParser {
 public:
  RegexParser(std::string_view s, GrammarBuilder& b, bool json) : s_(s), b_(b), json_(json) {}

  Expr parse() {
    if (s_.size() > b_.limits().max_input_bytes)
      fail<InvalidArgument>("regex of {} bytes exceeds the limit of {}", s_.size(), b_.limits().max_input_bytes);
    if (!s_.empty() && s_[0] == '^') ++pos_;
    Expr e = parse_alt(0);
    if (pos_ < s_.size()) error(s_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    return e;
  }

 private:
  [[noreturn]] void error(const std::string& what) const { fail<InvalidArgument>("regex: {} at byte {}", what, pos_); }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  Expr chars(const CodepointSet& set) const { return json_ ? set.json_string_expr() : set.to_expr(); }

  Expr parse_alt(uint32_t depth) {
    if (depth > b_.limits().max_depth) error("groups nested deeper than " + std::to_string(b_.limits().max_depth));
    std::vector<Expr> alts{parse_seq(depth)};
    while (at('|')) {
      ++pos_;
      alts.push_back(parse_seq(depth));
    }
    return Expr::alt(std::move(alts));
  }

  Expr parse_seq(uint32_t depth) {
    std::vector<Expr> items;
    while (pos_ < s_.size() && !at('|') && !at(')')) {
      if (at('$')) {
        if (pos_ + 1 != s_.size()) error("'$' anchor only allowed at the end");
        ++pos_;
        break;
      }
      if (at('^')) error("'^' anchor only allowed at the start");
      Expr atom = parse_atom(depth);
      items.push_back(parse_quantifiers(std::move(atom)));
    }
    return Expr::seq(std::move(items));
  }

  Expr parse_atom(uint32_t depth) {
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      if (at('?')) {
        const std::string_view rest = s_.substr(pos_);
        if (rest.starts_with("?:"))
          pos_ += 2;
        else if (rest.starts_with("?=") || rest.starts_with("?!"))
          error("lookahead is not supported");
        else if (rest.starts_with("?<=") || rest.starts_with("?<!"))
          error("lookbehind is not supported");
        else if (rest.starts_with("?<") || rest.starts_with("?P<")) {
          const size_t close = s_.find('>', pos_);
          if (close == std::string_view::npos) error("unterminated group name");
          pos_ = close + 1;
        } else {
          error("inline flags and other (?...) groups are not supported");
        }
      }
      Expr e = parse_alt(depth + 1);
      if (!at(')')) error("missing ')'");
      ++pos_;
      return e;
    }
    if (c == '[') return chars(parse_class());
    if (c == '.') {
      ++pos_;
      CodepointSet nl;
      nl.add('\n', '\n');
      nl.add('\r', '\r');
      return chars(CodepointSet::all().minus(nl));
    }
    if (c == '*' || c == '+' || c == '?') error("quantifier without anything to repeat");
    if (c == '\\') return chars(parse_escape(false));
    std::string tmp(s_.substr(pos_, std::min<size_t>(4, s_.size() - pos_)));
    size_t i = 0;
    const uint32_t cp = utf8_next(tmp, i, "regex");
    pos_ += i;
    return chars(CodepointSet::one(cp));
  }

  bool parse_number(uint32_t& v) {
    const size_t start = pos_;
    uint64_t x = 0;
    while (pos_ < s_.size() && std::isdigit(uint8_t(s_[pos_]))) {
      x = x * 10 + uint64_t(s_[pos_++] - '0');
      if (x > b_.limits().max_repeat)
        error("repetition bound exceeds the limit " + std::to_string(b_.limits().max_repeat));
    }
    v = uint32_t(x);
    return pos_ > start;
  }

  Expr parse_quantifiers(Expr e) {
    for (;;) {
      if (at('*'))
        ++pos_, e = Expr::star(std::move(e));
      else if (at('+'))
        ++pos_, e = Expr::plus(std::move(e));
      else if (at('?'))
        ++pos_, e = Expr::optional(std::move(e));
      else if (at('{')) {
        const size_t save = pos_++;
        uint32_t min = 0, max = 0;
        const bool has_min = parse_number(min);
        bool ok = has_min, has_comma = false;
        if (at(',')) {
          ++pos_;
          has_comma = true;
          if (!parse_number(max)) max = Expr::kUnbounded;
        } else {
          max = min;
        }
        if (!ok || !at('}')) {  // not a quantifier: a literal '{', as JavaScript reads it
          (void)has_comma;
          pos_ = save;
          return e;
        }
        ++pos_;
        if (max != Expr::kUnbounded && max < min) error("repetition has max < min");
        e = Expr::repeat(std::move(e), min, max);
      } else {
        return e;
      }
      if (at('?'))
        ++pos_;  // lazy: the same language
      else if (at('+'))
        error("possessive quantifiers are not supported");
    }
  }

  uint32_t parse_hex(size_t n) {
    if (const auto v = read_hex(s_, pos_, n)) return *v;
    error("bad hex escape");
  }

  // After a backslash (at s_[pos_]); in a class \b is a backspace.
  CodepointSet parse_escape(bool in_class) {
    ++pos_;
    if (pos_ >= s_.size()) error("trailing backslash");
    const char c = s_[pos_++];
    CodepointSet s;
    switch (c) {
      case 'd': s.add('0', '9'); return s;
      case 'D': s.add('0', '9'); return s.negated();
      case 'w': s.add('a', 'z'), s.add('A', 'Z'), s.add('0', '9'), s.add('_', '_'); return s;
      case 'W': s.add('a', 'z'), s.add('A', 'Z'), s.add('0', '9'), s.add('_', '_'); return s.negated();
      case 's': s.add(' ', ' '), s.add('\t', '\r'); return s;
      case 'S': s.add(' ', ' '), s.add('\t', '\r'); return s.negated();
      case 'n': return CodepointSet::one('\n');
      case 'r': return CodepointSet::one('\r');
      case 't': return CodepointSet::one('\t');
      case 'f': return CodepointSet::one('\f');
      case 'v': return CodepointSet::one('\v');
      case '0': return CodepointSet::one(0);
      case 'x': return CodepointSet::one(parse_hex(2));
      case 'u': return CodepointSet::one(parse_hex(4));
      case 'b':
        if (in_class) return CodepointSet::one('\b');
        error("word boundary \\b is not supported");
      case 'B': error("\\B is not supported");
      case 'k': error("backreferences are not supported");
      case 'p':
      case 'P': error("Unicode property escapes are not supported");
      default:
        if (c >= '1' && c <= '9') error("backreferences are not supported");
        if (std::isalnum(uint8_t(c))) error(std::string("unknown escape '\\") + c + "'");
        return CodepointSet::one(uint8_t(c));
    }
  }

  uint32_t class_char(CodepointSet* multi) {
    if (at('\\')) {
      const CodepointSet e = parse_escape(true);
      if (e.ranges().size() == 1 && e.ranges()[0].first == e.ranges()[0].second) return e.ranges()[0].first;
      *multi = e;  // \d and friends: not usable as a range end
      return UINT32_MAX;
    }
    std::string tmp(s_.substr(pos_, std::min<size_t>(4, s_.size() - pos_)));
    size_t i = 0;
    const uint32_t cp = utf8_next(tmp, i, "regex");
    pos_ += i;
    return cp;
  }

  CodepointSet parse_class() {
    ++pos_;
    const bool negate = at('^');
    if (negate) ++pos_;
    CodepointSet set;
    bool first = true;
    while (pos_ < s_.size() && (!at(']') || first)) {
      first = false;
      CodepointSet multi;
      const uint32_t lo = class_char(&multi);
      if (lo == UINT32_MAX) {
        set.add(multi);
        continue;
      }
      if (at('-') && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        const uint32_t hi = class_char(&multi);
        if (hi == UINT32_MAX) error("class range ends in a class escape");
        if (hi < lo) error("class range out of order");
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    if (!at(']')) error("unterminated class");
    ++pos_;
    return negate ? set.negated() : set;
  }

  std::string_view s_;
  size_t pos_ = 0;
  GrammarBuilder& b_;
  bool json_;
};

}  // namespace

Expr regex_expr(GrammarBuilder& b, std::string_view pattern, bool json_string) {
  return RegexParser(pattern, b, json_string).parse();
}

Grammar compile_regex(std::string_view pattern, const GrammarLimits& limits) {
  GrammarBuilder b(limits);
  const uint32_t root = b.rule("root");
  b.define(root, regex_expr(b, pattern, false));
  return b.finish(root);
}

}  // namespace pagoda::grammar
