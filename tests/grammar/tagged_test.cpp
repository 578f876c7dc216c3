// The tagged front end: JSON values of a schema inside literal markup, one
// or more (up to max) joined by a separator; bad bodies are InvalidArgument;
// the schemas' ignored keywords are reported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/cache.h"
#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using nlohmann::json;
using testing::full_match;

const json kBody = json::parse(R"({"begin": "[", "separator": ", ", "end": "]", "items": [
  {"begin": "<a>", "schema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
   "end": "</a>"},
  {"begin": "<b>", "schema": {"type": "boolean"}}]})");

TEST(Tagged, MarkupAroundSchemaValues) {
  const Grammar g = compile_tagged(kBody.dump()).grammar;
  EXPECT_TRUE(full_match(g, R"([<a>{"x":1}</a>])"));
  EXPECT_TRUE(full_match(g, R"([<b>true, <a>{"x":-2}</a>, <b>false])"));
  EXPECT_FALSE(full_match(g, "[]"));                     // at least one
  EXPECT_FALSE(full_match(g, R"([<a>{"x":1}])"));        // its end markup
  EXPECT_FALSE(full_match(g, R"([<a>{"x":"1"}</a>])"));  // its schema
  EXPECT_FALSE(full_match(g, R"([<b>true,<b>true])"));   // the separator exactly
  EXPECT_FALSE(full_match(g, R"(x[<b>true])"));          // nothing around
  json one = kBody;
  one["max"] = 1;
  const Grammar g1 = compile_tagged(one.dump()).grammar;
  EXPECT_TRUE(full_match(g1, "[<b>true]"));
  EXPECT_FALSE(full_match(g1, "[<b>true, <b>true]"));
  // Random outputs stay inside the markup.
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    const std::string s = testing::random_string(g, rng);
    EXPECT_TRUE(s.starts_with("[<") && s.ends_with("]")) << s;
  }
}

TEST(Tagged, BadBodiesAndIgnoredKeywords) {
  for (const char* bad : {"", "[]", "{}", R"({"items": []})", R"({"items": [{"begin": "x"}]})",
                          R"({"items": [{"schema": {}, "end": 3}]})", R"({"max": 0, "items": [{"schema": {}}]})",
                          R"({"items": [{"schema": {"type": "nope"}}]})"})
    EXPECT_THROW(compile_tagged(bad), InvalidArgument) << bad;
  JsonSchemaOptions lax;
  lax.strict = false;
  const auto r = compile_tagged(R"({"items": [{"schema": {"type": "string", "contentEncoding": "base64"}}]})", lax);
  EXPECT_EQ(r.ignored.size(), 1u);
  EXPECT_THROW(compile_tagged(R"({"items": [{"schema": {"type": "string", "contentEncoding": "base64"}}]})"),
               InvalidArgument);
  // Through the cache as a constraint kind.
  EXPECT_TRUE(full_match(compile({ConstraintSpec::Kind::tagged, kBody.dump(), true, false})->grammar, "[<b>true]"));
}

}  // namespace
}  // namespace pagoda::grammar
