// Regex front end: agreement with std::regex (ECMAScript) on every string up
// to a length over a small alphabet, UTF-8 classes, and the refusals.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using testing::full_match;

TEST(Regex, AgreesWithStdRegexOnAllShortStrings) {
  const char* patterns[] = {
      "a*b+",    "(ab|c)*", "^a?b{2,3}$",  "[a-c]{0,2}d?", "[^a]c",    "(?:a|bc)+d*", "(a)b|c{2}", "a.c",
      "\\d\\w?", "[\\d.]+", "a{2,}|b{,2}", "a|",           "(a|b)*?c", "[]a]",        "a{x",
  };
  const std::string alphabet = "abcd1.{x,2}";
  for (const char* p : patterns) {
    SCOPED_TRACE(p);
    const auto g = compile_regex(p);
    std::string pat = p;
    if (pat == "a{2,}|b{,2}") pat = "a{2,}|b\\{,2\\}";  // ECMAScript reads {,2} as literal text, as we do
    if (pat == "[]a]") pat = "[\\]a]";
    if (pat == "a{x") pat = "a\\{x";
    const std::regex re(pat);
    std::vector<std::string> layer{""};
    for (int len = 0; len <= 4; ++len) {
      std::vector<std::string> next;
      for (const auto& s : layer) {
        ASSERT_EQ(full_match(g, s), std::regex_match(s, re)) << "'" << s << "'";
        if (len < 4)
          for (char c : alphabet) next.push_back(s + c);
      }
      layer = std::move(next);
    }
  }
}

TEST(Regex, RandomStringsMatchAndOneByteCorruptionsAgree) {
  const char* patterns[] = {"[a-z]{3,8}@[a-z]+\\.(com|org)", "-?(0|[1-9][0-9]*)(\\.[0-9]+)?", "(ab|cd)+e?f{1,3}"};
  std::mt19937 rng(3);
  for (const char* p : patterns) {
    SCOPED_TRACE(p);
    const auto g = compile_regex(p);
    const std::regex re(p);
    for (int i = 0; i < 40; ++i) {
      const std::string s = testing::random_string(g, rng);
      ASSERT_TRUE(std::regex_match(s, re)) << s;
      for (size_t at = 0; at < s.size(); ++at) {
        for (char c : std::string("a@.-09ef")) {
          std::string t = s;
          t[at] = c;
          ASSERT_EQ(full_match(g, t), std::regex_match(t, re)) << t;
        }
        std::string t = s;
        t.erase(at, 1);
        ASSERT_EQ(full_match(g, t), std::regex_match(t, re)) << t;
      }
    }
  }
}

TEST(Regex, Utf8) {
  const auto g = compile_regex("[^a-z]\\S.");
  EXPECT_TRUE(full_match(g, "\xC3\xA9\xE4\xB8\x80\xF0\x9F\x98\x80"));
  EXPECT_FALSE(full_match(g, "a\xE4\xB8\x80x"));
  EXPECT_FALSE(full_match(g, "A \n"));
  EXPECT_FALSE(full_match(g, "AB\n"));  // '.' excludes newlines
  EXPECT_FALSE(full_match(g, "AB\xC3"));
  EXPECT_TRUE(full_match(compile_regex("\\u00e9\\x41"),
                         "\xC3\xA9"
                         "A"));
}

TEST(Regex, UnsupportedConstructsAreNamed) {
  auto bad = [](const char* p, const char* needle) {
    try {
      compile_regex(p);
      ADD_FAILURE() << "accepted: " << p;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad("(a)\\1", "backreference");
  bad("(?<n>a)\\k<n>", "backreference");
  bad("a(?=b)", "lookahead");
  bad("a(?!b)", "lookahead");
  bad("(?<=a)b", "lookbehind");
  bad("(?<!a)b", "lookbehind");
  bad("\\bword", "word boundary");
  bad("a^b", "'^' anchor");
  bad("a$b", "'$' anchor");
  bad("(?i)a", "inline flags");
  bad("\\p{L}", "Unicode property");
  bad("a++", "possessive");
  bad("(a", "missing ')'");
  bad("a)", "unbalanced");
  bad("[a", "unterminated class");
  bad("*a", "without anything to repeat");
  bad("a{1000000}", "exceeds the limit");
  bad("[z-a]", "out of order");
  bad("(a*)*", "left recursion");
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "(";
  bad(deep.c_str(), "nested deeper");
}

}  // namespace
}  // namespace pagoda::grammar
