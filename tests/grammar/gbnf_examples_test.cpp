// Small GBNF grammars in the spirit of llama.cpp's examples (json,
// arithmetic, list, chess, japanese), written here from the documented
// syntax; random strings of each are checked by an independent reference.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "grammar/frontends.h"
#include "grammar_testing.h"

namespace pagoda::grammar {
namespace {

const char* kJson = R"g(
root   ::= obj
value  ::= obj | arr | str | num | ("true" | "false" | "null")
obj    ::= "{" sp ( str sp ":" sp value sp ("," sp str sp ":" sp value sp)* )? "}"
arr    ::= "[" sp ( value sp ("," sp value sp)* )? "]"
str    ::= "\"" ( [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
num    ::= "-"? ([0-9] | [1-9] [0-9]{0,12}) ("." [0-9]{1,8})? ([eE] [-+]? [0-9]{1,2})?
sp     ::= [ \t\n]{0,8}
)g";

const char* kArithmetic = R"g(
root ::= (expr "=" term "\n")+
expr ::= term ([-+*/] term)*
term ::= [0-9]+ | "(" expr ")"
)g";

const char* kList = R"g(
root ::= item+
# each line is a bullet
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g";

const char* kChess = R"g(
root ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move ::= (pawn | nonpawn | castle) [+#]?
pawn ::= [a-h] ([1-8] | "x" [a-h] [1-8]) ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)g";

const char* kJapanese = R"g(
root ::= jp-char+ ([ \t\n] jp-char+)*
jp-char ::= hiragana | katakana | punctuation | cjk
hiragana ::= [ぁ-ゟ]
katakana ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk ::= [一-鿿]
)g";

// Arithmetic reference: a recursive-descent parser of the same language.
struct Arith {
  const std::string& s;
  size_t i = 0;
  bool term() {
    if (i < s.size() && s[i] == '(') {
      ++i;
      if (!expr() || i >= s.size() || s[i] != ')') return false;
      ++i;
      return true;
    }
    const size_t start = i;
    while (i < s.size() && isdigit(uint8_t(s[i]))) ++i;
    return i > start;
  }
  bool expr() {
    if (!term()) return false;
    while (i < s.size() && std::string_view("+-*/").find(s[i]) != std::string_view::npos) {
      ++i;
      if (!term()) return false;
    }
    return true;
  }
  bool all() {
    do {
      if (!expr() || i >= s.size() || s[i++] != '=' || !term() || i >= s.size() || s[i++] != '\n') return false;
    } while (i < s.size());
    return true;
  }
};

bool japanese_ok(const std::string& s) {
  // Decode UTF-8 and check every code point's block; words separated by single blanks.
  bool prev_blank = true;
  for (size_t i = 0; i < s.size();) {
    const auto c = uint8_t(s[i]);
    if (c == ' ' || c == '\t' || c == '\n') {
      if (prev_blank) return false;
      prev_blank = true;
      ++i;
      continue;
    }
    if ((c & 0xF0) != 0xE0 || i + 3 > s.size()) return false;
    const uint32_t cp = ((c & 0x0F) << 12) | ((uint8_t(s[i + 1]) & 0x3F) << 6) | (uint8_t(s[i + 2]) & 0x3F);
    const bool ok = (cp >= 0x3041 && cp <= 0x309F) || (cp >= 0x30A1 && cp <= 0x30FF) ||
                    (cp >= 0x3001 && cp <= 0x303E) || (cp >= 0x4E00 && cp <= 0x9FFF);
    if (!ok) return false;
    prev_blank = false;
    i += 3;
  }
  return !prev_blank;
}

template <class F>
void check_walks(const char* gbnf, F ok, int n = 60) {
  const auto g = compile_gbnf(gbnf);
  std::mt19937 rng(9);
  for (int i = 0; i < n; ++i) {
    const std::string s = testing::random_string(g, rng, 70);
    ASSERT_TRUE(ok(s)) << s;
  }
}

TEST(GbnfExamples, Json) {
  check_walks(kJson,
              [](const std::string& s) { return nlohmann::json::accept(s) && nlohmann::json::parse(s).is_object(); });
}

TEST(GbnfExamples, Arithmetic) {
  check_walks(kArithmetic, [](const std::string& s) { return Arith{s}.all(); });
  const auto g = compile_gbnf(kArithmetic);
  EXPECT_TRUE(testing::full_match(g, "(1+2)*3=9\n"));
  EXPECT_FALSE(testing::full_match(g, "(1+2*3=9\n"));
}

TEST(GbnfExamples, List) {
  const std::regex re("(- [^\\r\\n\\x0b\\x0c]+\\n)+");
  check_walks(kList, [&](const std::string& s) {
    return std::regex_match(s, re) && s.find("\xC2\x85") == std::string::npos &&
           s.find("\xE2\x80\xA8") == std::string::npos;
  });
}

TEST(GbnfExamples, Chess) {
  const std::string move = "(([a-h]([1-8]|x[a-h][1-8])(=[NBRQ])?)|([NBKQR][a-h]?[1-8]?x?[a-h][1-8])|(O-O(-O)?))[+#]?";
  const std::regex re("1\\. " + move + " " + move + "\\n([1-9][0-9]?\\. " + move + " " + move + "\\n)+");
  check_walks(kChess, [&](const std::string& s) { return std::regex_match(s, re); });
}

TEST(GbnfExamples, Japanese) { check_walks(kJapanese, japanese_ok); }

}  // namespace
}  // namespace pagoda::grammar
