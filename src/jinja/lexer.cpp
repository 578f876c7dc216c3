// Lexer: preprocessing (Hugging Face's whitespace rules), then one pass
// that alternates text and tag contents.
#include "jinja/lexer.h"

#include <cctype>

#include "jinja/error.h"

namespace pagoda::jinja {

size_t js_space_at(std::string_view s, size_t i) {
  const unsigned char c = s[i];
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xA0) return 2;  // U+00A0
  if (i + 2 >= s.size()) return 0;
  const unsigned char c1 = s[i + 1], c2 = s[i + 2];
  if (c == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3;  // U+1680
  if (c == 0xE2 && c1 == 0x80 && (c2 <= 0x8A || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 3;
  if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3;  // U+205F
  if (c == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3;  // U+3000
  if (c == 0xEF && c1 == 0xBB && c2 == 0xBF) return 3;  // U+FEFF
  return 0;
}

namespace {

// Byte length of the whitespace character that ends at s[end-1], or 0.
size_t js_space_before(std::string_view s, size_t end) {
  for (size_t len = 1; len <= 3 && len <= end; ++len)
    if (js_space_at(s, end - len) == len) return len;
  return 0;
}

}  // namespace

std::string_view js_trim_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const size_t n = js_space_before(s, end);
    if (n == 0) break;
    end -= n;
  }
  return s.substr(0, end);
}

std::string_view js_trim_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = js_space_at(s, i);
    if (n == 0) break;
    i += n;
  }
  return s.substr(i);
}

namespace {

bool is_line_break_before(std::string_view s, size_t i) {
  if (i == 0) return true;
  const char p = s[i - 1];
  if (p == '\n' || p == '\r') return true;
  // U+2028 / U+2029 end lines for JavaScript's multiline ^.
  return i >= 3 && s.substr(i - 3, 2) == "\xE2\x80" && (s[i - 1] == '\xA8' || s[i - 1] == '\xA9');
}

// lstrip_blocks: drop [ \t]* at a line start before `{%`, `{#` or `{-`.
std::string lstrip_blocks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (is_line_break_before(s, i)) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j + 1 < s.size() && s[j] == '{' && (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
        i = j;
      } else {
        out.append(s.substr(i, j - i));
        if (j == i)
          out += s[i++];
        else
          i = j;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

// trim_blocks: drop the newline right after `#}`, `%}` or `-}`.
std::string trim_blocks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '}' && i > 0 && (s[i - 1] == '#' || s[i - 1] == '%' || s[i - 1] == '-') && i + 1 < s.size() &&
        s[i + 1] == '\n')
      ++i;
  }
  return out;
}

// If s[i..] is `{%-? (end)?generation -?%}`, its end and the two strip flags.
bool generation_tag(std::string_view s, size_t i, size_t& end, bool& lstrip, bool& rstrip) {
  if (s.substr(i, 2) != "{%") return false;
  size_t j = i + 2;
  lstrip = j < s.size() && s[j] == '-';
  if (lstrip) ++j;
  while (j < s.size() && js_space_at(s, j)) j += js_space_at(s, j);
  if (s.substr(j, 3) == "end") j += 3;
  if (s.substr(j, 10) != "generation") return false;
  j += 10;
  while (j < s.size() && js_space_at(s, j)) j += js_space_at(s, j);
  rstrip = j < s.size() && s[j] == '-';
  if (rstrip) ++j;
  if (s.substr(j, 2) != "%}") return false;
  end = j + 2;
  return true;
}

// Removes `{% generation %}` / `{% endgeneration %}` and, unless `-` says
// otherwise, keeps the whitespace around them.
std::string strip_generation(const std::string& s) {
  if (s.find("generation") == std::string::npos) return s;
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t end;
    bool l, r;
    if (s[i] == '{' && generation_tag(s, i, end, l, r)) {
      if (l) out = std::string(js_trim_end(out));
      i = end;
      if (r) i = s.size() - js_trim_start(std::string_view(s).substr(i)).size();
      continue;
    }
    out += s[i++];
  }
  return out;
}

std::string preprocess(std::string_view t) {
  if (!t.empty() && t.back() == '\n') t.remove_suffix(1);
  return strip_generation(trim_blocks(lstrip_blocks(t)));
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct Lexer {
  std::string src;
  size_t pos = 0;
  int curly_depth = 0;
  std::vector<Token> tokens;

  // Lines counted incrementally (positions only grow), so lexing stays linear.
  mutable size_t line_pos = 0;
  mutable int line = 1;
  int line_at(size_t p) const {
    for (; line_pos < p && line_pos < src.size(); ++line_pos) line += src[line_pos] == '\n';
    return line;
  }
  [[noreturn]] void error(const std::string& what) const {
    throw SyntaxError("template syntax error at line " + std::to_string(line_at(pos)) + ": " + what);
  }
  void push(Tok t, std::string v) { tokens.push_back({t, std::move(v), line_at(pos)}); }
  bool at(std::string_view s) const { return std::string_view(src).substr(pos, s.size()) == s; }
  Tok last() const { return tokens.empty() ? Tok::text : tokens.back().type; }

  void strip_trailing_text() {
    if (tokens.empty() || tokens.back().type != Tok::text) return;
    tokens.back().value = std::string(js_trim_end(tokens.back().value));
    if (tokens.back().value.empty()) tokens.pop_back();
  }
  void skip_space() {
    while (pos < src.size() && js_space_at(src, pos)) pos += js_space_at(src, pos);
  }
  std::string read_string(char quote);
  void read_number(std::string prefix);
  bool read_text();
  void read_comment();
  void read_operator();
  void run();
};

std::string Lexer::read_string(char quote) {
  std::string out;
  ++pos;
  while (true) {
    if (pos >= src.size()) error("unterminated string");
    char c = src[pos++];
    if (c == quote) return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos >= src.size()) error("unexpected end of input");
    c = src[pos++];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\'':
      case '"':
      case '\\': out += c; break;
      case 'x':
      case 'u': {
        const size_t n = c == 'x' ? 2 : 4;
        if (pos + n > src.size()) error("invalid hexadecimal escape");
        unsigned cp = 0;
        for (size_t k = 0; k < n; ++k) {
          const char h = src[pos + k];
          if (!std::isxdigit(static_cast<unsigned char>(h))) error("invalid hexadecimal escape");
          cp = cp * 16 + (is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        pos += n;
        if (cp < 0x80) {
          out += static_cast<char>(cp);
        } else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: error(std::string("unexpected escaped character: ") + c);
    }
  }
}

void Lexer::read_number(std::string prefix) {
  std::string num = std::move(prefix);
  while (pos < src.size() && is_digit(src[pos])) num += src[pos++];
  if (last() != Tok::dot && pos + 1 < src.size() && src[pos] == '.' && is_digit(src[pos + 1])) {
    num += src[pos++];
    while (pos < src.size() && is_digit(src[pos])) num += src[pos++];
  }
  push(Tok::number, num);
}

bool Lexer::read_text() {
  const size_t start = pos;
  while (pos < src.size() && !(src[pos] == '{' && pos + 1 < src.size() &&
                               (src[pos + 1] == '%' || src[pos + 1] == '{' || src[pos + 1] == '#')))
    ++pos;
  if (pos == start) return false;
  push(Tok::text, src.substr(start, pos - start));
  return true;
}

void Lexer::read_comment() {
  pos += 2;
  const bool strip_before = pos < src.size() && src[pos] == '-';
  if (strip_before) ++pos;
  const size_t end = src.find("#}", pos);
  if (end == std::string::npos) error("missing end of comment tag");
  std::string body = src.substr(pos, end - pos);
  const bool strip_after = !body.empty() && body.back() == '-';
  if (strip_before) strip_trailing_text();
  push(Tok::comment, std::move(body));
  pos = end + 2;
  if (strip_after) skip_space();
}

void Lexer::read_operator() {
  struct Op {
    std::string_view text;
    Tok type;
  };
  static constexpr Op kOps[] = {{"{%", Tok::open_statement},
                                {"%}", Tok::close_statement},
                                {"{{", Tok::open_expression},
                                {"}}", Tok::close_expression},
                                {"(", Tok::lparen},
                                {")", Tok::rparen},
                                {"{", Tok::lbrace},
                                {"}", Tok::rbrace},
                                {"[", Tok::lbracket},
                                {"]", Tok::rbracket},
                                {",", Tok::comma},
                                {".", Tok::dot},
                                {":", Tok::colon},
                                {"|", Tok::pipe},
                                {"<=", Tok::comparison},
                                {">=", Tok::comparison},
                                {"==", Tok::comparison},
                                {"!=", Tok::comparison},
                                {"<", Tok::comparison},
                                {">", Tok::comparison},
                                {"+", Tok::additive},
                                {"-", Tok::additive},
                                {"~", Tok::additive},
                                {"**", Tok::power},
                                {"*", Tok::multiplicative},
                                {"//", Tok::multiplicative},
                                {"/", Tok::multiplicative},
                                {"%", Tok::multiplicative},
                                {"=", Tok::equals}};
  for (const Op& op : kOps) {
    if (op.type == Tok::close_expression && curly_depth > 0) continue;
    if (!at(op.text)) continue;
    push(op.type, std::string(op.text));
    if (op.type == Tok::open_expression) curly_depth = 0;
    if (op.type == Tok::lbrace) ++curly_depth;
    if (op.type == Tok::rbrace) --curly_depth;
    pos += op.text.size();
    return;
  }
  const char c = src[pos];
  if (c == '\'' || c == '"') {
    push(Tok::string, read_string(c));
  } else if (is_digit(c)) {
    read_number("");
  } else if (is_word(c)) {
    const size_t start = pos;
    while (pos < src.size() && is_word(src[pos])) ++pos;
    push(Tok::identifier, src.substr(start, pos - start));
  } else {
    error(std::string("unexpected character '") + c + "'");
  }
}

void Lexer::run() {
  while (pos < src.size()) {
    const Tok prev = last();
    if ((tokens.empty() || prev == Tok::close_statement || prev == Tok::close_expression || prev == Tok::comment) &&
        read_text())
      continue;
    if (at("{#")) {
      read_comment();
      continue;
    }
    if (at("{%-") || at("{{-")) {
      strip_trailing_text();
      const bool stmt = src[pos + 1] == '%';
      push(stmt ? Tok::open_statement : Tok::open_expression, stmt ? "{%" : "{{");
      if (!stmt) curly_depth = 0;
      pos += 3;
      continue;
    }
    skip_space();
    if (pos >= src.size()) break;
    if (at("-%}") || at("-}}")) {
      const bool stmt = src[pos + 1] == '%';
      push(stmt ? Tok::close_statement : Tok::close_expression, stmt ? "%}" : "}}");
      pos += 3;
      skip_space();
    } else if ((src[pos] == '-' || src[pos] == '+') && prev != Tok::identifier && prev != Tok::number &&
               prev != Tok::string && prev != Tok::rparen && prev != Tok::rbracket) {
      if (tokens.empty() || prev == Tok::text) error(std::string("unexpected character ") + src[pos]);
      const char sign = src[pos++];
      if (pos < src.size() && is_digit(src[pos])) {
        read_number(std::string(1, sign));
      } else {
        push(Tok::unary, std::string(1, sign));
      }
    } else {
      read_operator();
    }
  }
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  Lexer lx;
  lx.src = preprocess(source);
  lx.run();
  return lx.tokens;
}

}  // namespace pagoda::jinja
