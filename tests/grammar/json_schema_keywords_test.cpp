// JSON Schema's numeric keywords (bounds, multipleOf) and string formats:
// accept/reject at the boundaries against an exact decimal oracle, random
// outputs of each grammar checked by it, and strict / lenient reporting.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "grammar/frontends.h"
#include "grammar_testing.h"
#include "testing/build_paths.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using testing::full_match;

// An exact decimal for the oracle: sign, integer digits, fraction digits (normalized).
struct Dec {
  bool neg = false;
  std::string ip, fp;
};
Dec dec(std::string s) {
  Dec d;
  if (!s.empty() && s[0] == '-') d.neg = true, s = s.substr(1);
  const size_t dot = s.find('.');
  d.ip = s.substr(0, dot);
  d.fp = dot == std::string::npos ? "" : s.substr(dot + 1);
  d.ip.erase(0, std::min(d.ip.find_first_not_of('0'), d.ip.size()));
  while (!d.fp.empty() && d.fp.back() == '0') d.fp.pop_back();
  if (d.ip.empty() && d.fp.empty()) d.neg = false;
  return d;
}
int cmp(const Dec& a, const Dec& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  int c = a.ip.size() != b.ip.size() ? (a.ip.size() < b.ip.size() ? -1 : 1) : a.ip.compare(b.ip);
  if (c == 0) c = a.fp.compare(b.fp);
  c = c < 0 ? -1 : c > 0 ? 1 : 0;
  return a.neg ? -c : c;
}
// A JSON number's text without exponent, leading zeros or "-0".
bool plain_number(const std::string& s) {
  static const std::regex re("-?(0|[1-9][0-9]*)(\\.[0-9]+)?");
  return std::regex_match(s, re) && s != "-0" && !(s.starts_with("-0") && dec(s).ip.empty() && dec(s).fp.empty());
}

struct Bounds {
  std::optional<std::string> min, max, xmin, xmax;
};
bool in_bounds(const std::string& s, const Bounds& b) {
  const Dec v = dec(s);
  if (b.min && cmp(v, dec(*b.min)) < 0) return false;
  if (b.xmin && cmp(v, dec(*b.xmin)) <= 0) return false;
  if (b.max && cmp(v, dec(*b.max)) > 0) return false;
  if (b.xmax && cmp(v, dec(*b.xmax)) >= 0) return false;
  return true;
}
std::string schema_of(const char* type, const Bounds& b, const std::string& extra = "") {
  std::string s = fmt::format(R"({{"type":"{}")", type);
  if (b.min) s += ",\"minimum\":" + *b.min;
  if (b.max) s += ",\"maximum\":" + *b.max;
  if (b.xmin) s += ",\"exclusiveMinimum\":" + *b.xmin;
  if (b.xmax) s += ",\"exclusiveMaximum\":" + *b.xmax;
  return s + extra + "}";
}
// Multiples by the oracle: s * 10^q is an integer divisible by k.
bool multiple(const std::string& s, uint64_t k, size_t q) {
  const Dec v = dec(s);
  if (v.fp.size() > q) return false;
  std::string digits = v.ip + v.fp + std::string(q - v.fp.size(), '0');
  uint64_t r = 0;
  for (char c : digits) r = (r * 10 + uint64_t(c - '0')) % k;
  return r == 0;
}

const std::vector<Bounds> kBounds = {
    {"1", "5", {}, {}},    {{}, {}, "1", "5"},       {"-2.5", "3.25", {}, {}},  {{}, "0", "-0.5", {}},
    {"0.001", {}, {}, {}}, {{}, {}, {}, "-1.5"},     {"-3.75", "-1.2", {}, {}}, {"-1", {}, "0.07", "12"},
    {"0", "0", {}, {}},    {"10", "99.5", {}, "99"}, {{}, {}, "-0.25", "0.25"},
};

TEST(JsonSchemaNumbers, BoundedNumbersAgreeWithTheOracle) {
  std::vector<std::string> texts;
  for (int v = -1300; v <= 1300; ++v) {  // hundredths, written several ways
    const int a = std::abs(v);
    const std::string sign = v < 0 ? "-" : "";
    texts.push_back(fmt::format("{}{}.{:02}", sign, a / 100, a % 100));
    if (a % 100 == 0) texts.push_back(fmt::format("{}{}", sign, a / 100));
    if (a % 10 == 0) texts.push_back(fmt::format("{}{}.{}", sign, a / 100, a % 100 / 10));
    texts.push_back(fmt::format("{}{}.{:02}01", sign, a / 100, a % 100));
    texts.push_back(fmt::format("{}{}.{:02}99", sign, a / 100, a % 100));
  }
  for (const char* t : {"-0", "-0.0", "01", "1e0", "5E-1", "00.5", "1.", ".5", "+1"}) texts.push_back(t);
  for (const auto& b : kBounds) {
    const std::string schema = schema_of("number", b);
    SCOPED_TRACE(schema);
    const auto g = compile_json_schema(schema).grammar;
    for (const auto& t : texts) ASSERT_EQ(full_match(g, t), plain_number(t) && in_bounds(t, b)) << t;
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) {
      const std::string s = testing::random_string(g, rng, 30);
      ASSERT_TRUE(plain_number(s) && in_bounds(s, b)) << s;
    }
  }
}

TEST(JsonSchemaNumbers, TheIssueExample) {
  const auto g =
      compile_json_schema(R"({"type":"object","properties":{"rating":{"type":"number","minimum":1,"maximum":5}},
      "required":["rating"]})")
          .grammar;
  for (const char* ok : {R"({"rating":1})", R"({"rating":4.5})", R"({"rating":5})", R"({"rating":5.00})"})
    EXPECT_TRUE(full_match(g, ok)) << ok;
  for (const char* bad : {R"({"rating":95.5})", R"({"rating":5.01})", R"({"rating":0.99})", R"({"rating":1e0})"})
    EXPECT_FALSE(full_match(g, bad)) << bad;
}

TEST(JsonSchemaNumbers, IntegerBoundsAndMultiples) {
  struct Case {
    Bounds b;
    std::string multiple;  // "" for none
  };
  const std::vector<Case> cases = {
      {{"-7", "7", {}, {}}, ""},        {{{}, {}, "-7.5", "7"}, ""},    {{"0.5", "20.2", {}, {}}, ""},
      {{"-1000", "-999", {}, {}}, ""},  {{"-50", "50", {}, {}}, "3"},   {{{}, {}, "0", {}}, "7"},
      {{{}, "-3", {}, {}}, "12"},       {{"13", "2987", {}, {}}, "25"}, {{}, "0.5"},
      {{"-100", "100", {}, {}}, "2.5"}, {{{}, {}, {}, {}}, "1"},
  };
  for (const auto& c : cases) {
    const std::string schema = schema_of("integer", c.b, c.multiple.empty() ? "" : ",\"multipleOf\":" + c.multiple);
    SCOPED_TRACE(schema);
    const auto g = compile_json_schema(schema).grammar;
    // multipleOf 2.5 on integers: multiples of 5; 0.5: every integer.
    const uint64_t k = c.multiple.empty() || c.multiple == "0.5" ? 1
                       : c.multiple == "2.5"                     ? 5
                                                                 : std::stoull(c.multiple);
    for (int v = -3100; v <= 3100; ++v) {
      const std::string t = std::to_string(v);
      ASSERT_EQ(full_match(g, t), in_bounds(t, c.b) && multiple(t, k, 0)) << t;
    }
    for (const char* t : {"-0", "007", "1.0", "1e1"}) EXPECT_FALSE(full_match(g, t)) << t;
  }
  const auto big = compile_json_schema(R"({"type":"integer","minimum":123456789012345678901234567890})").grammar;
  EXPECT_TRUE(full_match(big, "123456789012345678901234567890000"));
  EXPECT_FALSE(full_match(big, "99999999999999999999999999999"));
}

TEST(JsonSchemaNumbers, DecimalMultiples) {
  const auto cents = compile_json_schema(R"({"type":"number","minimum":0,"maximum":10,"multipleOf":0.01})").grammar;
  for (const char* ok : {"0.00", "3.10", "0.05", "10.00", "9.99"}) EXPECT_TRUE(full_match(cents, ok)) << ok;
  for (const char* bad : {"3.105", "10.01", "-0.01", "3", "3.1", "1e1"}) EXPECT_FALSE(full_match(cents, bad)) << bad;
  const auto halves = compile_json_schema(R"({"type":"number","exclusiveMinimum":-2,"multipleOf":0.5})").grammar;
  for (const char* ok : {"-1.5", "0.0", "2.5", "1000.0"}) EXPECT_TRUE(full_match(halves, ok)) << ok;
  for (const char* bad : {"-2.0", "2.4", "-0.0", "0.50"}) EXPECT_FALSE(full_match(halves, bad)) << bad;
  const auto threes = compile_json_schema(R"({"type":"number","multipleOf":3})").grammar;
  for (int v = -200; v <= 200; ++v) ASSERT_EQ(full_match(threes, std::to_string(v)), v % 3 == 0) << v;
  std::mt19937 rng(9);
  for (const char* m : {"0.25", "0.003", "7", "1.5"}) {
    const std::string schema = fmt::format(R"({{"type":"number","minimum":-4.2,"maximum":60,"multipleOf":{}}})", m);
    const auto g = compile_json_schema(schema).grammar;
    const Dec md = dec(m);
    const uint64_t k = std::stoull(md.ip + md.fp);
    for (int i = 0; i < 200; ++i) {
      const std::string s = testing::random_string(g, rng, 30);
      ASSERT_TRUE(plain_number(s) && in_bounds(s, {"-4.2", "60", {}, {}}) && multiple(s, k, md.fp.size()))
          << schema << ": " << s;
    }
  }
}

TEST(JsonSchemaNumbers, LimitsAndReporting) {
  auto error_of = [](const std::string& schema, const JsonSchemaOptions& o = {}) -> std::string {
    try {
      compile_json_schema(schema, o);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"type":"number","minimum":1e300})").find("out of range"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"number","minimum":"1"})").find("minimum must be a number"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"number","multipleOf":0})").find("greater than 0"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"number","minimum":5,"maximum":1})").find("matches nothing"), std::string::npos);
  const char* huge = R"({"type":"integer","minimum":0,"maximum":1000000000,"multipleOf":99991})";
  EXPECT_NE(error_of(huge).find("unsupported keyword 'multipleOf'"), std::string::npos) << error_of(huge);
  JsonSchemaOptions lenient;
  lenient.strict = false;
  const auto r = compile_json_schema(huge, lenient);
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_TRUE(r.ignored[0].starts_with("#/multipleOf")) << r.ignored[0];
  EXPECT_TRUE(full_match(r.grammar, "1000000000"));  // the bounds still hold
  EXPECT_FALSE(full_match(r.grammar, "1000000001"));
  // Draft 4's boolean exclusive bounds, and numeric keywords without a type.
  const auto d4 = compile_json_schema(R"({"type":"number","minimum":1,"exclusiveMinimum":true,"maximum":2,
      "exclusiveMaximum":false})")
                      .grammar;
  EXPECT_FALSE(full_match(d4, "1"));
  EXPECT_TRUE(full_match(d4, "1.5"));
  EXPECT_TRUE(full_match(d4, "2"));
  const auto untyped = compile_json_schema(R"({"maximum":3})").grammar;
  EXPECT_TRUE(full_match(untyped, "-3.5"));
  EXPECT_FALSE(full_match(untyped, "3.5"));
  EXPECT_FALSE(full_match(untyped, "\"x\""));
}

TEST(JsonSchemaFormats, ValidAndInvalid) {
  const std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {"date",
       {{"2024-02-29", "2000-02-29", "2023-12-31", "1999-04-30"},
        {"2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "23-01-01"}}},
      {"time",
       {{"23:59:59Z", "00:00:00.123+05:30", "12:30:00-08:00"}, {"24:00:00Z", "12:30Z", "12:30:00", "12:60:00Z"}}},
      {"date-time",
       {{"2024-05-06T07:08:09Z", "2024-05-06T07:08:09.5+01:00"}, {"2024-05-06 07:08:09Z", "2024-05-06T07:08:09"}}},
      {"duration", {{"P1Y", "P1Y2M3DT4H5M6S", "PT5M", "P3W", "P1DT12H"}, {"P", "PT", "P1DT", "P1W2D", "1Y", "PT1.5S"}}},
      {"email", {{"a.b+c@example.co.uk", "x_1@host.io"}, {"a@b", "@example.com", "a..b@example.com", "a@-x.com"}}},
      {"hostname",
       {{"example.com", "a", "my-host.internal.example.org"}, {"-a.com", "a-.com", "a..b", "a.com.", "a_b.com"}}},
      {"ipv4", {{"192.168.0.1", "0.0.0.0", "255.255.255.255"}, {"256.1.1.1", "01.2.3.4", "1.2.3"}}},
      {"ipv6",
       {{"::", "::1", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8", "fe80::", "1::8"},
        {":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "1:2:3:4:5:6:7::8"}}},
      {"uuid",
       {{"123e4567-e89b-12d3-a456-426614174000"},
        {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}}},
  };
  for (const auto& [format, examples] : cases) {
    const auto g = compile_json_schema(fmt::format(R"({{"type":"string","format":"{}"}})", format)).grammar;
    for (const auto& s : examples.first) EXPECT_TRUE(full_match(g, "\"" + s + "\"")) << format << ": " << s;
    for (const auto& s : examples.second) EXPECT_FALSE(full_match(g, "\"" + s + "\"")) << format << ": " << s;
  }
}

TEST(JsonSchemaFormats, ZodLookaheadPatternsAndLengths) {
  const nlohmann::json host = {
      {"type", "string"},
      {"format", "hostname"},
      {"pattern",
       R"(^(?=.{1,253}\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\.?$)"}};
  const auto g = compile_json_schema(host.dump()).grammar;  // strict: the format stands for zod's pattern
  EXPECT_TRUE(full_match(g, R"("api.example.com")"));
  EXPECT_FALSE(full_match(g, R"("-x.com")"));
  const nlohmann::json dur = {
      {"type", "string"},
      {"format", "duration"},
      {"pattern", R"(^P(?:(\d+W)|(?!.*W)(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+([.,]\d+)?S)?)?)$)"}};
  EXPECT_TRUE(full_match(compile_json_schema(dur.dump()).grammar, R"("PT1H30M")"));
  // Another lookahead beside a format: strict names it; lenient enforces the format and lists the pattern.
  const char* other = R"({"type":"string","format":"ipv4","pattern":"^(?!10\\.).*$"})";
  try {
    compile_json_schema(other);
    ADD_FAILURE() << "strict accepted a lookahead pattern";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported keyword 'pattern'"), std::string::npos) << e.what();
  }
  JsonSchemaOptions lenient;
  lenient.strict = false;
  const auto r = compile_json_schema(other, lenient);
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_TRUE(r.ignored[0].starts_with("#/pattern")) << r.ignored[0];
  EXPECT_TRUE(full_match(r.grammar, R"("10.0.0.1")"));
  // Lengths beside a format: fine when the format's own lengths fit, else unsupported.
  EXPECT_NO_THROW(compile_json_schema(R"({"type":"string","format":"uuid","minLength":36,"maxLength":36})"));
  EXPECT_THROW(compile_json_schema(R"({"type":"string","format":"email","maxLength":40})"), InvalidArgument);
  // allOf parts that disagree on a keyword cannot both hold.
  EXPECT_THROW(compile_json_schema(R"({"type":"string","allOf":[{"pattern":"a+"},{"pattern":"b+"}]})"),
               InvalidArgument);
}

// The fuzz seeds compile (or are refused by a named error) in both modes.
TEST(JsonSchemaKeywords, FuzzSeedsCompile) {
  const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "fuzz/corpus";
  for (const char* target : {"grammar_json_schema", "grammar_tagged"})
    for (const auto& f : std::filesystem::directory_iterator(dir / target)) {
      std::ifstream in(f.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (bool strict : {true, false}) {
        JsonSchemaOptions o;
        o.strict = strict;
        try {
          if (std::string(target) == "grammar_tagged") {
            compile_tagged(text, o);
          } else {
            compile_json_schema(text, o);
          }
        } catch (const InvalidArgument&) {
        }
      }
    }
  JsonSchemaOptions o;
  EXPECT_NO_THROW(compile_json_schema(
      [] {
        std::ifstream in(std::filesystem::path(PAGODA_SOURCE_DIR) / "fuzz/corpus/grammar_json_schema/number_multiple");
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      }(),
      o));
}

}  // namespace
}  // namespace pagoda::grammar
