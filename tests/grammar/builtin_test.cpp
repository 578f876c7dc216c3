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

bool json_object_ok(const std::string& s) {
  if (!nlohmann::json::accept(s)) return false;
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
        // nlohmann and the grammar agree except on whitespace runs longer than our 64 limit (not produced here).
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
}

TEST(Choice, ExactlyOneOfTheStrings) {
  const auto g = compile_choice({"yes", "no", "maybe", "", "y\xC3\xA9"});
  for (const char* s : {"yes", "no", "maybe", "", "y\xC3\xA9"}) EXPECT_TRUE(full_match(g, s)) << s;
  for (const char* s : {"ye", "yess", "n", "Yes", "y"}) EXPECT_FALSE(full_match(g, s)) << s;
  EXPECT_THROW(compile_choice({}), InvalidArgument);
}

}  // namespace
}  // namespace pagoda::grammar
