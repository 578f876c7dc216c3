// JSON Schema front end: random outputs of each schema parse and validate
// (nlohmann::json + a small validator for the keywords used here), specific
// accepts/rejects, strict and non-strict modes, and the limits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <random>
#include <regex>

#include "grammar/cache.h"
#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using nlohmann::json;
using testing::full_match;

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (uint8_t(c) & 0xC0) != 0x80;
  return n;
}

// A small validator for the keywords these tests use.
bool valid(const json& v, const json& s, const json& root) {
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    return valid(v, r == "#" ? root : root.at(json::json_pointer(r.substr(1))), root);
  }
  if (s.contains("nullable") && s["nullable"] == true && v.is_null()) return true;
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
  if (s.contains("anyOf")) {
    for (const auto& k : s["anyOf"])
      if (valid(v, k, root)) return true;
    return false;
  }
  if (s.contains("type") && s["type"].is_array()) {
    for (const auto& t : s["type"]) {
      json c = s;
      c["type"] = t;
      if (valid(v, c, root)) return true;
    }
    return false;
  }
  const std::string t = s.value("type", "");
  if (t == "integer") {
    if (v.is_number_float() && std::fabs(v.get<double>()) > 9e18)  // past int64: nlohmann reads a double
      return (!s.contains("minimum") || v.get<double>() >= s["minimum"].get<double>()) &&
             (!s.contains("maximum") || v.get<double>() <= s["maximum"].get<double>());
    if (!v.is_number_integer()) return false;
    const int64_t x = v.get<int64_t>();
    return (!s.contains("minimum") || x >= s["minimum"].get<int64_t>()) &&
           (!s.contains("maximum") || x <= s["maximum"].get<int64_t>());
  }
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "string") {
    if (!v.is_string()) return false;
    const std::string str = v;
    if (s.contains("pattern") && !std::regex_match(str, std::regex(s["pattern"].get<std::string>()))) return false;
    if (s.contains("minLength") && utf8_length(str) < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && utf8_length(str) > s["maxLength"].get<size_t>()) return false;
    return true;
  }
  if (t == "array") {
    if (!v.is_array()) return false;
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    for (size_t i = 0; i < v.size(); ++i) {
      const bool pre = s.contains("prefixItems") && i < s["prefixItems"].size();
      if (pre && !valid(v[i], s["prefixItems"][i], root)) return false;
      if (!pre && s.contains("items") && !valid(v[i], s["items"], root)) return false;
    }
    return true;
  }
  if (t == "object") {
    if (!v.is_object()) return false;
    for (const auto& r : s.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return false;
    for (const auto& [k, x] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        if (!valid(x, s["properties"][k], root)) return false;
      } else if (!s.contains("additionalProperties") || s["additionalProperties"] == false) {
        return false;
      } else if (s["additionalProperties"].is_object() && !valid(x, s["additionalProperties"], root)) {
        return false;
      }
    }
    return true;
  }
  return true;
}

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":8},
        "age":{"type":"integer","minimum":-5,"maximum":130},"tags":{"type":"array","items":{"enum":["a","b",3]},"maxItems":3},
        "ok":{"type":["boolean","null"]}},"required":["name","age"]})",
    R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date-time"},
        "ip":{"type":"string","format":"ipv4"},"mail":{"type":"string","format":"email"},"d":{"type":"string","format":"date"},
        "code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"}},"required":["id","when","ip","mail","d","code"]})",
    R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":10},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
        "required":["v"]}},"$ref":"#/$defs/node"})",
    R"({"type":"array","prefixItems":[{"const":"x"},{"type":"number"}],"items":{"type":"string","nullable":true},"minItems":1,"maxItems":4})",
    R"({"type":"object","properties":{"a":{"type":"integer","maximum":-10}},"additionalProperties":{"type":"integer","minimum":0,"maximum":999}})",
    R"({"anyOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},{"type":"string","pattern":"a\"b\\\\c*"}]})",
};

TEST(JsonSchema, RandomOutputsValidate) {
  std::mt19937 rng(5);
  const std::regex huge("[0-9][eE][-+]?[0-9]{3,}");
  for (const char* text : kSchemas) {
    SCOPED_TRACE(text);
    const json schema = json::parse(text);
    for (bool ws : {false, true}) {
      JsonSchemaOptions o;
      o.any_whitespace = ws;
      const auto g = compile_json_schema(text, o).grammar;
      for (int i = 0; i < 30; ++i) {
        const std::string s = testing::random_string(g, rng, 120);
        if (std::regex_search(s, huge)) continue;  // nlohmann refuses doubles that overflow (1E999); JSON does not
        ASSERT_TRUE(json::accept(s)) << s;
        ASSERT_TRUE(valid(json::parse(s), schema, schema)) << s;
        // Compact, properties in schema order (escapes aside: dump() writes its own).
        const std::string dumped = nlohmann::ordered_json::parse(s).dump();
        if (!ws && s.find('\\') == std::string::npos && !std::regex_search(s, std::regex("[0-9][eE]")) &&
            dumped.find("e+") == std::string::npos) {
          ASSERT_EQ(dumped, s);
        }
      }
    }
  }
}

TEST(JsonSchema, AcceptsAndRejects) {
  const auto g = compile_json_schema(kSchemas[0]).grammar;
  EXPECT_TRUE(full_match(g, R"({"name":"Al","age":130,"tags":["a",3],"ok":null})"));
  EXPECT_TRUE(full_match(g, R"({"name":"Al","age":-5})"));
  EXPECT_FALSE(full_match(g, R"({"age":3,"name":"Al"})"));            // order as given
  EXPECT_FALSE(full_match(g, R"({"name":"Al"})"));                    // required
  EXPECT_FALSE(full_match(g, R"({"name":"Al","age":131})"));          // maximum
  EXPECT_FALSE(full_match(g, R"({"name":"Al","age":-6})"));           // minimum
  EXPECT_FALSE(full_match(g, R"({"name":"","age":1})"));              // minLength
  EXPECT_FALSE(full_match(g, R"({"name":"123456789","age":1})"));     // maxLength
  EXPECT_FALSE(full_match(g, R"({"name":"A","age":1,"x":1})"));       // no additional properties
  EXPECT_FALSE(full_match(g, R"({"name":"A","age":1,"tags":[1]})"));  // enum
  EXPECT_FALSE(full_match(g, R"({"name":"A","age":01})"));
  EXPECT_FALSE(full_match(g, R"({"name":"A", "age":1})"));  // compact
  const auto h = compile_json_schema(kSchemas[4]).grammar;
  EXPECT_TRUE(full_match(h, R"({"a":-10,"zz":999,"":0})"));
  EXPECT_FALSE(full_match(h, R"({"a":-9})"));
  EXPECT_FALSE(full_match(h, R"({"a":-10,"zz":1000})"));
  const auto s = compile_json_schema(R"({"type":"string","pattern":"a\"b\\\\c*"})").grammar;
  EXPECT_TRUE(full_match(s, R"("a\"b\\cc")"));
  EXPECT_FALSE(full_match(s, R"("a"b\cc")"));
  const auto all_of = compile_json_schema(R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"boolean"}},"required":["b"]}]})")
                          .grammar;
  EXPECT_TRUE(full_match(all_of, R"({"a":1,"b":true})"));
  EXPECT_FALSE(full_match(all_of, R"({"a":1})"));
}

TEST(JsonSchema, IntegerRanges) {
  std::mt19937 rng(1);
  for (auto [lo, hi] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {-7, 7}, {13, 2987}, {-1000, -999}, {5, 1000000}}) {
    const auto g =
        compile_json_schema(fmt::format(R"({{"type":"integer","minimum":{},"maximum":{}}})", lo, hi)).grammar;
    for (int64_t v = lo - 30; v <= std::min(hi, lo + 3000) + 30; ++v)
      ASSERT_EQ(full_match(g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << ": " << v;
    EXPECT_FALSE(full_match(g, "-0"));
    EXPECT_FALSE(full_match(g, "007"));
  }
  const auto open = compile_json_schema(R"({"type":"integer","exclusiveMinimum":99})").grammar;
  EXPECT_FALSE(full_match(open, "99"));
  EXPECT_TRUE(full_match(open, "100"));
  EXPECT_TRUE(full_match(open, "123456789012"));
}

TEST(JsonSchema, StrictAndLenient) {
  const char* text =
      R"({"type":"object","properties":{"a":{"type":"string","contentEncoding":"base64"}},"patternProperties":{}})";
  try {
    compile_json_schema(text);
    ADD_FAILURE() << "strict accepted an unsupported keyword";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("patternProperties"), std::string::npos) << e.what();
  }
  JsonSchemaOptions o;
  o.strict = false;
  const auto r = compile_json_schema(text, o);
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"#/patternProperties", "/properties/a/contentEncoding"}));
  EXPECT_TRUE(full_match(r.grammar, R"({"a":"x"})"));
}

TEST(JsonSchema, Errors) {
  auto bad = [](const std::string& text, const char* needle) {
    try {
      compile_json_schema(text);
      ADD_FAILURE() << "accepted: " << text.substr(0, 200);
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad("{", "not valid JSON");
  bad(R"({"type":"strin"})", "unknown type");
  bad(R"({"$ref":"#/$defs/nope"})", "not found");
  bad(R"({"$ref":"http://x/y"})", "only local $ref");
  bad(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})", "matches nothing");
  bad(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})", "matches nothing");  // never ends
  bad(R"({"type":"integer","minimum":5,"maximum":4})", "matches nothing");
  bad(R"({"type":"array","maxItems":1000000})", "exceeds the limit");
  bad(R"({"type":"string","pattern":"(a)\\1"})", "backreference");
  bad(R"({"type":"object","required":["x"]})", "not in properties");
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 1000; ++i) deep += "}";
  bad(deep, "deeper");
  bad(std::string(600 * 1024, ' '), "exceeds the limit");
}

TEST(JsonSchema, ManyRefsCompileWithoutDeepRecursion) {
  // A chain of 3000 $defs, each referring to the next: breadth-first, no stack growth.
  json defs;
  for (int i = 0; i < 3000; ++i) {
    const std::string name = fmt::format("d{}", i);
    defs[name] = i + 1 < 3000 ? json{{"$ref", fmt::format("#/$defs/d{}", i + 1)}} : json{{"type", "integer"}};
  }
  const json schema = {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
  const auto g = compile_json_schema(schema.dump()).grammar;
  EXPECT_TRUE(full_match(g, "42"));
}

TEST(GrammarCache, SharesByContentAndBounds) {
  GrammarCache cache(2);
  const ConstraintSpec a{ConstraintSpec::Kind::regex, "a+", true, false};
  const ConstraintSpec b{ConstraintSpec::Kind::choice, R"(["x","y"])", true, false};
  const ConstraintSpec c{ConstraintSpec::Kind::json_object, "", true, false};
  const auto ga = cache.compile(a);
  EXPECT_EQ(cache.compile(a), ga);
  EXPECT_EQ(cache.hits(), 1u);
  cache.compile(b);
  cache.compile(c);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.compile(a), ga);  // evicted, compiled again
  EXPECT_THROW(cache.compile({ConstraintSpec::Kind::choice, "[1]", true, false}), InvalidArgument);
  EXPECT_THROW(cache.compile({ConstraintSpec::Kind::gbnf, "root ::= (", true, false}), InvalidArgument);
  auto vocab = std::make_shared<const TokenVocab>(std::vector<std::string>{"", "x", "y"}, std::vector<int32_t>{0});
  const auto t1 = cache.tables(b, vocab);
  EXPECT_EQ(cache.tables(b, vocab), t1);
}

}  // namespace
}  // namespace pagoda::grammar
