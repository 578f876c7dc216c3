// The built-in JSON grammar (random walks parse with nlohmann::json, and
// one-byte corruptions agree with it) and `choice`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using testing::full_match;

// Every whitespace run outside strings is one space, or one newline and at most 20 spaces / tabs.
bool gaps_ok(const std::string& s) {
  static const std::regex gap("( |\n[ \t]{0,20})");
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (in_string) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == '"')
        in_string = false;
      continue;
    }
    if (s[i] == '"') in_string = true;
    if (std::string(" \t\n\r").find(s[i]) == std::string::npos) continue;
    size_t j = i;
    while (j < s.size() && std::string(" \t\n\r").find(s[j]) != std::string::npos) ++j;
    if (!std::regex_match(s.substr(i, j - i), gap)) return false;
    i = j - 1;
  }
  return true;
}

bool json_object_ok(const std::string& s) {
  if (!nlohmann::json::accept(s) || !gaps_ok(s)) return false;
  const auto j = nlohmann::json::parse(s);
  // nlohmann accepts leading/trailing whitespace; the grammar starts at '{' and ends at '}'.
  return j.is_object() && !s.empty() && s.front() == '{' && s.back() == '}';
}

TEST(BuiltinJson, RandomObjectsParseAndCorruptionsAgree) {
  const auto g = builtin_json_object_grammar();
  std::mt19937 rng(11);
  const std::regex huge("[0-9][eE][-+]?[0-9]{3,}");
  for (int i = 0; i < 60; ++i) {
    const std::string s = testing::random_string(g, rng, 80);
    if (std::regex_search(s, huge)) continue;  // see below
    ASSERT_TRUE(json_object_ok(s)) << s;
    for (size_t at = 0; at < s.size(); ++at) {
      for (char c : std::string("{}[]\",:0a \\e.-")) {
        std::string t = s;
        t[at] = c;
        // nlohmann refuses numbers that overflow a double (1E999); JSON's grammar does not.
        if (t.find_first_of("eE") != std::string::npos && std::regex_search(t, huge)) continue;
        // Whitespace runs are held to the bound by gaps_ok.
        ASSERT_EQ(full_match(g, t), json_object_ok(t)) << nlohmann::json(t).dump(-1, ' ', true);
      }
    }
  }
}

TEST(BuiltinJson, Examples) {
  const auto g = builtin_json_object_grammar();
  EXPECT_TRUE(full_match(g, R"({"a": [1, 2.5e-3, true, null, {"b": "\u00e9\n"}], "c": {}})"));
  EXPECT_TRUE(full_match(g, "{\n  \"k\": \"\xE4\xB8\x80\"\n}"));
  EXPECT_FALSE(full_match(g, R"([1])"));
  EXPECT_FALSE(full_match(g, R"({"a": 01})"));
  EXPECT_FALSE(full_match(g, R"({"a": "\x"})"));
  EXPECT_FALSE(full_match(g, "{\"a\": \"\x01\"}"));
  EXPECT_FALSE(full_match(g, "{\"a\": 1,}"));
  // Bounded whitespace: one space, or one newline and up to 20 spaces / tabs.
  EXPECT_TRUE(full_match(g, "{\n\t\"a\":\n" + std::string(20, ' ') + "1 }"));
  EXPECT_FALSE(full_match(g, "{\n\n\"a\":1}"));
  EXPECT_FALSE(full_match(g, "{\"a\":  1}"));
  EXPECT_FALSE(full_match(g, "{\"a\":\n" + std::string(21, ' ') + "1}"));
  EXPECT_FALSE(full_match(g, "{\"a\":1\r\n}"));
}

TEST(Choice, ExactlyOneOfTheStrings) {
  const auto g = compile_choice({"yes", "no", "maybe", "", "y\xC3\xA9"});
  for (const char* s : {"yes", "no", "maybe", "", "y\xC3\xA9"}) EXPECT_TRUE(full_match(g, s)) << s;
  for (const char* s : {"ye", "yess", "n", "Yes", "y"}) EXPECT_FALSE(full_match(g, s)) << s;
  EXPECT_THROW(compile_choice({}), InvalidArgument);
}

}  // namespace
}  // namespace pagoda::grammar
