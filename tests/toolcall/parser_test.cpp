// Tool-call parsers: each format whole, streamed split at every byte and at
// random multi-splits (same content and calls), arguments streamed in pieces,
// malformed calls kept as text before commit and cut where they broke after.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <random>

#include "testing/build_paths.h"
#include "testing/shared_data.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall {
namespace {

using json = nlohmann::json;

struct Want {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments text (exactly)
  bool whole = false;  // calls emitted whole (arguments in one delta), not streamed in pieces
};

void expect_same(const ParsedOutput& got, const Want& want, const std::string& how) {
  EXPECT_EQ(got.content, want.content) << how;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << how;
  for (size_t i = 0; i < want.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].first) << how;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << how;
    EXPECT_FALSE(got.calls[i].id.empty()) << how;
  }
}

// For streamed(): a parser for required's array of calls (ToolCallParser::for_array).
const std::string kArray = "[required]";

// `pieces`, if given: how many argument deltas each call came in.
// `function`: a parser for that named function (ToolCallParser::for_function), or kArray.
ParsedOutput streamed(Format f, std::string_view text, const std::vector<size_t>& cuts,
                      std::vector<size_t>* pieces = nullptr, const std::string& function = "") {
  ToolCallParser p = function.empty()     ? ToolCallParser(f)
                     : function == kArray ? ToolCallParser::for_array(f)
                                          : ToolCallParser::for_function(f, function);
  ParsedOutput out;
  std::vector<size_t> count;
  size_t at = 0;
  auto take = [&](ParseStep s) {
    out.content += s.content;
    // A call's first delta has its id and name and no arguments, later ones only arguments.
    for (const auto& d : s.calls) {
      const bool first = d.index >= out.calls.size();
      EXPECT_EQ(d.index, first ? out.calls.size() : out.calls.size() - 1);
      EXPECT_EQ(!d.id.empty(), first);
      EXPECT_EQ(!d.name.empty(), first);
      EXPECT_EQ(d.arguments.empty(), first);
      apply_deltas(out.calls, {d});
      count.resize(out.calls.size());
      count[d.index] += !first;
    }
  };
  for (size_t cut : cuts) take(p.push(text.substr(at, cut - at))), at = cut;
  take(p.push(text.substr(at)));
  take(p.finish());
  if (pieces) *pieces = count;
  return out;
}

// Whole, every single split point, and random multi-splits all agree.
void check(Format f, const std::string& text, const Want& want) {
  expect_same(parse_all(f, text), want, "whole");
  for (size_t cut = 0; cut <= text.size(); ++cut)
    expect_same(streamed(f, text, {cut}), want, "split at " + std::to_string(cut));
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<size_t> cuts;
    for (size_t at = 0; at < text.size(); at += 1 + rng() % 5) cuts.push_back(at);
    expect_same(streamed(f, text, cuts), want, "random split");
  }
  std::vector<size_t> bytes;  // one byte at a time
  for (size_t at = 1; at < text.size(); ++at) bytes.push_back(at);
  std::vector<size_t> pieces;
  expect_same(streamed(f, text, bytes, &pieces), want, "byte by byte");
  // Streamed arguments arrive as the model writes them: several pieces.
  for (size_t n : pieces) EXPECT_TRUE(want.whole ? n == 1 : n > 1) << n << " argument deltas";
}

TEST(Hermes, CallsAfterContent) {
  check(Format::hermes,
        "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
        {"Let me look.\n", {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}}});
}

TEST(Hermes, PlainTextAndLookalikes) {
  check(Format::hermes, "a < b and <tool but not a call", {"a < b and <tool but not a call", {}});
}

TEST(Hermes, MalformedCallStaysText) {
  const std::string bad = "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>";
  check(Format::hermes, "x " + bad + " y", {"x " + bad + " y", {}});
  const std::string not_json = "<tool_call>{name: f}</tool_call>";
  check(Format::hermes, not_json + "<tool_call>{\"name\":\"g\",\"arguments\":{\"a\":1}}</tool_call>",
        {not_json, {{"g", R"({"a":1})"}}});
  check(Format::hermes, "<tool_call>{\"arguments\": {}}</tool_call>",
        {"<tool_call>{\"arguments\": {}}</tool_call>", {}});
}

TEST(Hermes, UnterminatedCallAtTheEnd) {
  check(Format::hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a}b\"}}\n",
        {"", {{"f", R"({"q":"a}b"})"}}});
  check(Format::hermes, "<tool_call>{\"name\": \"f\"", {"<tool_call>{\"name\": \"f\"", {}});
}

TEST(Hermes, ArgumentsAsAString) {
  check(Format::hermes, R"(<tool_call>{"name": "f", "arguments": "{\"a\": 2}"}</tool_call>)",
        {"", {{"f", R"({"a":2})"}}, true});
}

// Arguments are the model's own object text, whitespace outside strings
// removed: keys keep their order, numbers and escapes their spelling.
TEST(Hermes, ArgumentsKeepTheModelsText) {
  check(Format::hermes,
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"z\": 1e3, \"a\": \"caf\\u00e9 \\\" }\",\n \"n\": [ "
        "]}}</tool_call>",
        {"", {{"f", R"({"z":1e3,"a":"caf\u00e9 \" }","n":[]})"}}});
}

// Before commit (no name first, arguments not an object) a call is emitted whole or stays content.
TEST(Hermes, ArgumentsBeforeNameComeWhole) {
  check(Format::hermes, R"(<tool_call>{"arguments": {"b": 1, "a": 2}, "name": "f"}</tool_call>)",
        {"", {{"f", R"({"b":1,"a":2})"}}, true});
}

// Committed, then broken: the call keeps what was streamed, the rest is content.
TEST(Hermes, CommittedThenBroken) {
  check(Format::hermes, R"(<tool_call>{"name": "f", "arguments": {"q": "abc)", {"", {{"f", R"({"q":"abc)"}}});
  check(Format::hermes, R"(x<tool_call>{"name": "f", "arguments": {"a": 1]}</tool_call> y)",
        {"x]}</tool_call> y", {{"f", R"({"a":1)"}}});
  check(Format::hermes, R"(<tool_call>{"name": "f", "arguments": {"a": 1</tool_call>)",
        {"</tool_call>", {{"f", R"({"a":1)"}}});
  check(
      Format::hermes,
      R"(<tool_call>{"name": "f", "arguments": {}} oops</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>)",
      {"oops</tool_call>", {{"f", "{}"}, {"g", "{}"}}});
  check(Format::hermes, R"(<tool_call>{"name": "f", "arguments": {"a": [1, 2]}})", {"", {{"f", R"({"a":[1,2]})"}}});
}

TEST(Llama3Json, CutOffMidArguments) {
  check(Format::llama3_json, R"({"name": "f", "parameters": {"x": [1, 2)", {"", {{"f", R"({"x":[1,2)"}}});
}

TEST(Mistral, LaterCallMalformed) {
  check(Format::mistral, R"([TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, {"arguments": {}}])",
        {R"( {"arguments": {}}])", {{"f", R"({"a":1})"}}});
  check(Format::mistral, R"([TOOL_CALLS]f[ARGS]{"a": "b)", {"", {{"f", R"({"a":"b)"}}});
}

TEST(DeepSeekV3, CutOffMidArguments) {
  check(Format::deepseek_v3,
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": [1, {\"b\": 2",
        {"", {{"f", R"({"a":[1,{"b":2)"}}});
}

// tool_choice naming a function: the output is its arguments object, streamed.
// (kArray: tool_choice "required" in the plain form, an array of calls.)
void check_function(const std::string& text, const Want& want, const std::string& function = "get_weather") {
  std::vector<size_t> bytes, pieces;
  for (size_t at = 1; at < text.size(); ++at) bytes.push_back(at);
  expect_same(streamed(Format::hermes, text, {}, nullptr, function), want, "whole");
  for (size_t cut = 0; cut <= text.size(); ++cut)
    expect_same(streamed(Format::hermes, text, {cut}, nullptr, function), want, "split at " + std::to_string(cut));
  expect_same(streamed(Format::hermes, text, bytes, &pieces, function), want, "byte by byte");
  for (size_t n : pieces) EXPECT_GT(n, 1u);
}

TEST(ForArray, EachCallStreamsOnceItsHeadIsRead) {
  check_function(R"([{"name": "a", "parameters": {"x": [1, "]"]}}, {"name":"b","parameters":{}}])",
                 {"", {{"a", R"({"x":[1,"]"]})"}, {"b", "{}"}}}, kArray);
  check_function(R"([{"name": "a", "arguments": {"x": 1}}])", {"", {{"a", R"({"x":1})"}}}, kArray);
  check_function(R"( [{"name": "a", "parameters": {"x": "O)", {"", {{"a", R"({"x":"O)"}}},
                 kArray);  // cut off by max_tokens: the committed call stays
  check_function(R"([{"name": "a", "parameters": {}}, {"name": 3}])", {R"( {"name": 3}])", {{"a", "{}"}}},
                 kArray);  // a later element that is no call: its text is content
  check_function(R"([{"parameters": {}, "name": "a"}])", {R"([{"parameters": {}, "name": "a"}])", {}}, kArray);
  check_function("[]", {"[]", {}}, kArray);
  check_function("no array", {"no array", {}}, kArray);
}

TEST(ForFunction, TheObjectIsOneStreamedCall) {
  check_function(R"({"city": "Oslo", "days": 2})", {"", {{"get_weather", R"({"city":"Oslo","days":2})"}}});
  check_function(" {\"city\": \"Os", {"", {{"get_weather", R"({"city":"Os)"}}});  // cut off by max_tokens
  check_function(R"({"days": 1} and more)", {" and more", {{"get_weather", R"({"days":1})"}}});
  check_function("no object here", {"no object here", {}});
  check_function("", {"", {}});
}

TEST(Llama3Json, BareAndTaggedCalls) {
  check(Format::llama3_json, R"({"name": "f", "parameters": {"x": [1, {"y": "}"}]}})",
        {"", {{"f", R"({"x":[1,{"y":"}"}]})"}}});
  check(Format::llama3_json,
        R"(<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"k": true}})",
        {"", {{"a", "{}"}, {"b", R"({"k":true})"}}});
}

TEST(Llama3Json, OnlyAtTheStart) {
  check(Format::llama3_json, R"(Sure: {"name": "f", "parameters": {}})",
        {R"(Sure: {"name": "f", "parameters": {}})", {}});
  check(Format::llama3_json, R"({"answer": 42} and more)", {R"({"answer": 42} and more)", {}});
  check(Format::llama3_json, R"({"name": "f", "parameters": {}} then text)", {" then text", {{"f", "{}"}}});
}

TEST(Pythonic, ListOfCalls) {
  check(Format::pythonic, R"([get_weather(city='San Francisco', days=3, metric=True), ping()])",
        {"", {{"get_weather", R"({"city":"San Francisco","days":3,"metric":true})"}, {"ping", "{}"}}, true});
  check(Format::pythonic, R"x([f(a=[1, 2.5, None], b={'k': "v)"}, c=-1e3)])x",
        {"", {{"f", R"x({"a":[1,2.5,null],"b":{"k":"v)"},"c":-1000.0})x"}}, true});
}

TEST(Pythonic, NotCallsStayText) {
  check(Format::pythonic, "[1, 2, 3]", {"[1, 2, 3]", {}});
  check(Format::pythonic, "[f(1)]", {"[f(1)]", {}});
  check(Format::pythonic, "Hello [f()]", {"Hello [f()]", {}});
  check(Format::pythonic, "[f(a=1)", {"[f(a=1)", {}});
}

TEST(Mistral, ArrayAndNamedForms) {
  check(Format::mistral, R"(Ok[TOOL_CALLS] [{"name": "f", "arguments": {"a": "[x]"}}, {"name": "g", "arguments": {}}])",
        {"Ok", {{"f", R"({"a":"[x]"})"}, {"g", "{}"}}});
  check(Format::mistral, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}[TOOL_CALLS]now[ARGS]{})",
        {"", {{"get_weather", R"({"city":"Rome"})"}, {"now", "{}"}}});
}

TEST(Mistral, IdsAreNineCharacters) {
  const auto out = parse_all(Format::mistral, R"([TOOL_CALLS][{"name": "f", "arguments": {}}])");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].id.size(), 9u);
  const auto h = parse_all(Format::hermes, R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)");
  ASSERT_EQ(h.calls.size(), 1u);
  EXPECT_TRUE(h.calls[0].id.starts_with("call_"));
}

TEST(Mistral, MalformedStaysText) {
  check(Format::mistral, "[TOOL_CALLS] nope", {"[TOOL_CALLS] nope", {}});
  check(Format::mistral, "[TOOL_CALLS][{\"name\": 1}] after", {"[TOOL_CALLS][{\"name\": 1}] after", {}});
}

TEST(DeepSeekV3, FencedCalls) {
  const std::string text =
      "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  check(Format::deepseek_v3, text, {"Checking.", {{"get_weather", R"({"city":"Oslo"})"}, {"now", "{}"}}});
  check(Format::deepseek_v3,
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        {"", {{"f", R"({"a":1})"}}});
  const std::string bad = "<｜tool▁calls▁begin｜>garbage<｜tool▁calls▁end｜>";
  check(Format::deepseek_v3, bad + " tail", {bad + " tail", {}});
}

TEST(Limits, TooManyCallsStayText) {
  std::string text;
  for (size_t i = 0; i < kMaxCalls + 2; ++i) text += R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)";
  const auto out = parse_all(Format::hermes, text);
  EXPECT_EQ(out.calls.size(), kMaxCalls);
  EXPECT_EQ(out.content, std::string(R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)") +
                             R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)");
}

TEST(Limits, HugeOrDeepCallsStayText) {
  const std::string huge = "<tool_call>" + std::string(kMaxCallBytes + 10, 'x');
  EXPECT_EQ(parse_all(Format::hermes, huge).content, huge);
  // Too deep before commit (arguments before the name): content.
  const std::string deep = "<tool_call>{\"arguments\": {\"a\": " + std::string(500, '[') + std::string(500, ']') +
                           "}, \"name\": \"f\"}</tool_call>";
  const auto out = parse_all(Format::hermes, deep);
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, deep);
}

// After commit the limits cut the call where it broke; the rest is content.
TEST(Limits, CommittedCallsCutAtTheLimit) {
  const std::string rest = std::string(500 - (kMaxDepth - 1), '[') + std::string(500, ']') + "}}</tool_call>";
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(500, '[') +
                           std::string(500, ']') + "}}</tool_call>";
  expect_same(parse_all(Format::hermes, deep), {rest, {{"f", "{\"a\":" + std::string(kMaxDepth - 1, '[')}}}, "deep");
  expect_same(streamed(Format::hermes, deep, {20, 100, 700}),
              {rest, {{"f", "{\"a\":" + std::string(kMaxDepth - 1, '[')}}}, "deep streamed");
  const std::string head = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"";
  const std::string huge = head + std::string(kMaxCallBytes + 10, 'x') + "\"}}</tool_call>";
  const size_t cut = std::string_view("<tool_call>").size() + kMaxCallBytes;
  const auto whole = parse_all(Format::hermes, huge);
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.content, huge.substr(cut));
  expect_same(streamed(Format::hermes, huge, {30, 1000, 40000, 65000, 65600}),
              {whole.content, {{"f", whole.calls[0].arguments}}}, "huge streamed");
}

TEST(Names, RoundTripAndDetection) {
  for (auto name : {"hermes", "llama3_json", "pythonic", "mistral", "deepseek_v3"})
    EXPECT_EQ(format_name(*format_from_name(name)), name);
  EXPECT_FALSE(format_from_name("nope"));
  EXPECT_EQ(detect_format("{{ '<tool_call>\\n' }}"), Format::hermes);
  EXPECT_EQ(detect_format("[TOOL_CALLS]"), Format::mistral);
  EXPECT_EQ(detect_format("<|python_tag|>"), Format::llama3_json);
  EXPECT_EQ(detect_format("<｜tool▁calls▁begin｜>"), Format::deepseek_v3);
  EXPECT_FALSE(detect_format("{{ messages }}"));
}

// The corpus's real templates announce the format their models emit.
// The markup a forced call is written in (server/tool_constraint) reads back as that call.
TEST(Names, CallMarkupParsesBack) {
  EXPECT_FALSE(call_markup(Format::pythonic));
  for (Format f : {Format::hermes, Format::llama3_json, Format::mistral, Format::deepseek_v3}) {
    const CallMarkup m = *call_markup(f);
    auto call = [&](const std::string& name, const std::string& args) {
      return m.head_before + (m.quote_name ? json(name).dump() : name) + m.head_after + args + m.tail;
    };
    const std::string text =
        m.begin + call("get_weather", R"({"city":"Oslo"})") + m.separator + call("ping", "{}") + m.end;
    check(f, text, {"", {{"get_weather", R"({"city":"Oslo"})"}, {"ping", "{}"}}});
  }
}

TEST(Names, RealTemplates) {
  auto read = [](const std::string& name) {
    const auto dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests" / "chat" / "templates";
    return testing::read_file((dir / name).string());
  };
  EXPECT_EQ(detect_format(read("Qwen--Qwen2.5-7B-Instruct.jinja")), Format::hermes);
  EXPECT_EQ(detect_format(read("Qwen--Qwen3-0.6B.jinja")), Format::hermes);
  EXPECT_EQ(detect_format(read("NousResearch--Hermes-2-Pro-Llama-3-8B-tool_use.jinja")), Format::hermes);
  EXPECT_EQ(detect_format(read("mistralai--Mistral-7B-Instruct-v0.3-tool_use.jinja")), Format::mistral);
  EXPECT_EQ(detect_format(read("meta-llama--Llama-3.1-8B-Instruct.jinja")), Format::llama3_json);
  EXPECT_EQ(detect_format(read("lenml-deepseek_v3.jinja")), Format::deepseek_v3);
}

}  // namespace
}  // namespace pagoda::toolcall
