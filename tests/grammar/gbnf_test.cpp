// GBNF front end: syntax, escapes, classes, repetition, errors and limits;
// whole-string acceptance on enumerated languages and their one-byte
// corruptions.
#include <gtest/gtest.h>

#include <regex>

#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using testing::full_match;

// Every string over `alphabet` up to `max_len`: the matcher must agree with
// `in_language` on each.
template <class F>
void check_language(const Grammar& g, std::string_view alphabet, size_t max_len, F in_language) {
  std::vector<std::string> layer{""};
  for (size_t len = 0; len <= max_len; ++len) {
    for (const auto& s : layer) EXPECT_EQ(full_match(g, s), in_language(s)) << "'" << s << "'\n" << g.describe();
    std::vector<std::string> next;
    if (len < max_len)
      for (const auto& s : layer)
        for (char c : alphabet) next.push_back(s + c);
    layer = std::move(next);
  }
}

TEST(Gbnf, LiteralsAlternativesGroups) {
  const auto g = compile_gbnf(R"(root ::= "ab" | "c" ( "d" | "e" ) # comment
  )");
  check_language(g, "abcde", 3, [](const std::string& s) { return s == "ab" || s == "cd" || s == "ce"; });
}

TEST(Gbnf, RepetitionMatchesStdRegex) {
  struct Case {
    const char* gbnf;
    const char* regex;
  } cases[] = {
      {R"(root ::= "a"* "b")", "a*b"},
      {R"(root ::= "a"+ "b"?)", "a+b?"},
      {R"(root ::= "a"{2} "b"{1,3})", "a{2}b{1,3}"},
      {R"(root ::= ("ab"){2,} | "b"{,2})", "(ab){2,}|b{0,2}"},
      {R"(root ::= [a-b]* "c" [^ab]?)", "[ab]*c[^ab]?"},
      {R"(root ::= x x
x ::= "a" | "b" x)",
       "(b*a){2}"},
      {R"(root ::= ("a" | "b"?)  "c")", "(a|b?)c"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.gbnf);
    const auto g = compile_gbnf(c.gbnf);
    const std::regex re(c.regex);
    check_language(g, "abc", 6, [&](const std::string& s) { return std::regex_match(s, re); });
  }
}

TEST(Gbnf, EscapesAndUtf8) {
  const auto g = compile_gbnf(R"(root ::= "\x41\u00e9\n\t\"\\" [\u4e00-\u9fff] "\U0001F600")");
  EXPECT_TRUE(full_match(g, "A\xC3\xA9\n\t\"\\\xE4\xB8\x80\xF0\x9F\x98\x80"));
  EXPECT_FALSE(full_match(g, "A\xC3\xA9\n\t\"\\a\xF0\x9F\x98\x80"));
  const auto any = compile_gbnf(R"(root ::= . .)");
  EXPECT_TRUE(full_match(any, "\n\xF0\x9F\x98\x80"));
  EXPECT_FALSE(full_match(any, "\xC0\x80\x41"));  // overlong
  EXPECT_FALSE(full_match(any,
                          "\xED\xA0\x80"
                          "a"));  // surrogate
  EXPECT_FALSE(full_match(any, "a"));
  const auto neg = compile_gbnf(R"(root ::= [^a-z\x00-\x1f]+)");
  EXPECT_TRUE(full_match(neg, "AZ\xC3\xA9"));
  EXPECT_FALSE(full_match(neg, "Ab"));
}

TEST(Gbnf, Errors) {
  auto bad = [](const char* text, const char* needle) {
    try {
      compile_gbnf(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad("x ::= \"a\"", "no 'root'");
  bad("root ::= y", "'y' is used but not defined");
  bad("root ::= \"a", "unterminated");
  bad("root ::= [a", "unterminated");
  bad("root ::= (\"a\"", "expected ')'");
  bad("root ::= \"a\" root", "matches nothing");  // never ends
  bad("root ::= [^\\x00-\\U0010FFFF]", "matches nothing");
  bad("root ::= root \"a\" | \"b\"", "left recursion");
  bad("root ::= (\"a\"?)*", "left recursion");
  bad("root ::= \"a\"{1000000}", "exceeds the limit");
  bad("root ::= \"\\q\"", "unknown escape");
  bad("root ::= \"a\" \nroot ::= \"b\"", "defined twice");
  bad("root ::= <[1234]>", "token references");
  std::string deep = "root ::= ";
  for (int i = 0; i < 200; ++i) deep += "(";
  bad(deep.c_str(), "nesting deeper");
  GrammarLimits small;
  small.max_input_bytes = 10;
  EXPECT_THROW(compile_gbnf("root ::= \"aaaaaaaaaaaa\"", small), InvalidArgument);
}

TEST(Gbnf, DeadAlternativesArePruned) {
  // "b" x can never finish: only "a" is left, so no state is a dead end.
  const auto g = compile_gbnf("root ::= \"a\" | \"b\" x\nx ::= \"c\" x");
  EXPECT_TRUE(full_match(g, "a"));
  EXPECT_FALSE(testing::prefix_match(g, "b"));
}

TEST(Gbnf, ExpandedSizeIsBounded) {
  // Nested repetitions share rules, so they do not multiply the size.
  const auto g = compile_gbnf("root ::= ((\"a\"{10000}){10000}){10000}");
  EXPECT_LT(g.elems.size(), 200000u);
  GrammarLimits small;
  small.max_elements = 5000;
  EXPECT_THROW(compile_gbnf("root ::= \"a\"{2000} \"b\"{2000} \"c\"{2000}", small), InvalidArgument);
}

}  // namespace
}  // namespace pagoda::grammar
