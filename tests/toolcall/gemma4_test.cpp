// Gemma 4's output: <|tool_call>call:NAME{..}<tool_call|> calls (the
// gemma4 tool-call format) with arguments in Gemma's own object syntax, and
// reasoning in <|channel>thought .. <channel|> (the gemma4 reasoning
// format). Each case whole, split at every byte boundary and byte by byte;
// content around and between calls, nested arguments, malformed calls left
// as content, output cut off at the end; the template detections on the
// real template.
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/build_paths.h"
#include "testing/shared_data.h"
#include "toolcall/think.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall {
namespace gemma4_test {  // named: the suite is one unity batch with parser_test.cpp

struct Want {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments text
};

ParsedOutput pieces(std::string_view text, const std::vector<size_t>& cuts) {
  ToolCallParser p(Format::gemma4);
  ParsedOutput out;
  auto take = [&](const ParseStep& s) {
    out.content += s.content;
    EXPECT_TRUE(s.reasoning.empty());
    apply_deltas(out.calls, s.calls);
  };
  size_t at = 0;
  for (size_t c : cuts) take(p.push(text.substr(at, c - at))), at = c;
  take(p.push(text.substr(at)));
  take(p.finish());
  return out;
}

void expect(const ParsedOutput& got, const Want& want, const std::string& how) {
  EXPECT_EQ(got.content, want.content) << how;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << how;
  for (size_t i = 0; i < want.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].first) << how;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << how;
    EXPECT_TRUE(got.calls[i].id.starts_with("call_")) << how;
  }
}

void check(const std::string& text, const Want& want) {
  expect(parse_all(Format::gemma4, text), want, "whole");
  for (size_t cut = 0; cut <= text.size(); ++cut) expect(pieces(text, {cut}), want, "cut at " + std::to_string(cut));
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  expect(pieces(text, bytes), want, "byte by byte");
}

const std::string Q = "<|\"|>";  // Gemma's string quote

TEST(Gemma4Calls, OneCall) {
  check("<|tool_call>call:get_time{city:" + Q + "London" + Q + "}<tool_call|>",
        {"", {{"get_time", R"({"city":"London"})"}}});
  check("<|tool_call>call:empty_args{}<tool_call|>", {"", {{"empty_args", "{}"}}});
}

TEST(Gemma4Calls, ScalarsAndNesting) {
  check("<|tool_call>call:f{a:42,b:-7,c:3.14,d:true,e:false,f:null}<tool_call|>",
        {"", {{"f", R"({"a":42,"b":-7,"c":3.14,"d":true,"e":false,"f":null})"}}});
  check("<|tool_call>call:todo{todos:[" + Q + "buy milk" + Q + "," + Q + "walk dog" + Q + "]}<tool_call|>",
        {"", {{"todo", R"({"todos":["buy milk","walk dog"]})"}}});
  check("<|tool_call>call:set{config:{theme:" + Q + "dark" + Q + ",count:3,tags:[],deep:{x:[{y:1}]}}}<tool_call|>",
        {"", {{"set", R"({"config":{"theme":"dark","count":3,"tags":[],"deep":{"x":[{"y":1}]}}})"}}});
  // Spaces between the parts, quoted keys, and a JSON string a model may write instead.
  check("<|tool_call>call:g{ a : 1 , " + Q + "b c" + Q + ": [ 1 , 2 ] , d:\"x\\\"y\" }<tool_call|>",
        {"", {{"g", R"({"a":1,"b c":[1,2],"d":"x\"y"})"}}});
}

TEST(Gemma4Calls, StringsHoldAnythingButTheQuote) {
  // Markup, JSON's special characters and the call's end marker inside a string are text.
  check("<|tool_call>call:say{text:" + Q + "a \"b\"\\ {c:[d]}\n<tool_call|> <|tool_call>" + Q + "}<tool_call|>",
        {"", {{"say", R"({"text":"a \"b\"\\ {c:[d]}\n<tool_call|> <|tool_call>"})"}}});
}

TEST(Gemma4Calls, ContentAroundAndSeveralCalls) {
  check("Hello, world!\nWhat's up?<|tool_call>call:get_time{city:" + Q + "Paris" + Q + "}<tool_call|>",
        {"Hello, world!\nWhat's up?", {{"get_time", R"({"city":"Paris"})"}}});
  check("<|tool_call>call:get_time{city:" + Q + "London" + Q + "}<tool_call|><|tool_call>call:get_weather{city:" + Q +
            "Paris" + Q + "}<tool_call|>",
        {"", {{"get_time", R"({"city":"London"})"}, {"get_weather", R"({"city":"Paris"})"}}});
  check("a <| b <|tool_ c", {"a <| b <|tool_ c", {}});
}

TEST(Gemma4Calls, MalformedCallsStayContent) {
  for (const std::string& bad : std::vector<std::string>{
           "<|tool_call>get_time{}<tool_call|>",               // no call:
           "<|tool_call>call:{a:1}<tool_call|>",               // no name
           "<|tool_call>call:two words{a:1}<tool_call|>",      // not one name
           "<|tool_call>call:f{a:}<tool_call|>",               // no value
           "<|tool_call>call:f{a:London}<tool_call|>",         // an unquoted string
           "<|tool_call>call:f{a:1,}<tool_call|>",             // a trailing comma
           "<|tool_call>call:f{a:[1,2}<tool_call|>",           // brackets that do not match
           "<|tool_call>call:f{a:1} tail<tool_call|>",         // text after the arguments
           "<|tool_call>call:f[1]<tool_call|>",                // arguments not an object
           "<|tool_call>call:f{a:" + Q + "open}<tool_call|>",  // a string never closed
       }) {
    // A string never closed hides the end marker: the text stays held to the end, then is content.
    check(bad + " then", {bad + " then", {}});
  }
  // A malformed call before a good one does not stop it.
  check("<|tool_call>call:f{a:}<tool_call|>x<|tool_call>call:g{}<tool_call|>",
        {"<|tool_call>call:f{a:}<tool_call|>x", {{"g", "{}"}}});
}

TEST(Gemma4Calls, NestingBeyondTheLimitIsContent) {
  const std::string deep = "<|tool_call>call:f{a:" + std::string(kMaxDepth + 2, '[') + "1" +
                           std::string(kMaxDepth + 2, ']') + "}<tool_call|>";
  EXPECT_EQ(parse_all(Format::gemma4, deep).content, deep);
  EXPECT_TRUE(parse_all(Format::gemma4, deep).calls.empty());
}

TEST(Gemma4Calls, LimitsHold) {
  // A call longer than kMaxCallBytes is content, streamed in pieces or whole.
  const std::string huge = "<|tool_call>call:f{a:" + Q + std::string(kMaxCallBytes, 'x') + Q + "}<tool_call|>";
  EXPECT_EQ(parse_all(Format::gemma4, huge).content, huge);
  std::vector<size_t> cuts;
  for (size_t at = 7; at < huge.size(); at += 7) cuts.push_back(at);
  EXPECT_EQ(pieces(huge, cuts).content, huge);
  // At most kMaxCalls calls; later ones stay content.
  std::string many;
  for (size_t i = 0; i <= kMaxCalls; ++i) many += "<|tool_call>call:f{}<tool_call|>";
  const ParsedOutput out = parse_all(Format::gemma4, many);
  EXPECT_EQ(out.calls.size(), kMaxCalls);
  EXPECT_EQ(out.content, "<|tool_call>call:f{}<tool_call|>");
}

TEST(Gemma4Calls, CutOffAtTheEnd) {
  // max_tokens inside the call: not a call, its text is content.
  check("Sure.<|tool_call>call:f{a:" + Q + "x", {"Sure.<|tool_call>call:f{a:" + Q + "x", {}});
  check("Sure.<|tool_call>call:f{a:1", {"Sure.<|tool_call>call:f{a:1", {}});
  // Whole but for the closing marker: the call stands.
  check("<|tool_call>call:f{a:1}", {"", {{"f", R"({"a":1})"}}});
  check("<|tool_call>call:f{a:1}<tool_", {"", {{"f", R"({"a":1})"}}});
}

TEST(Gemma4Calls, NamesAndMarkup) {
  EXPECT_EQ(format_from_name("gemma4"), Format::gemma4);
  EXPECT_EQ(format_name(Format::gemma4), "gemma4");
  EXPECT_NE(format_names().find("gemma4"), std::string::npos);
  EXPECT_FALSE(call_markup(Format::gemma4));  // forced choices use the JSON array form
}

// ---- reasoning

struct Split {
  std::string reasoning, content;
  bool operator==(const Split&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Split& s) {
  return os << "{reasoning: \"" << s.reasoning << "\", content: \"" << s.content << "\"}";
}

Split split(ThinkStart start, std::string_view text, const std::vector<size_t>& cuts) {
  ThinkSplitter p(ReasoningFormat::gemma4, start);
  Split out;
  auto take = [&](const SplitStep& s) { out.reasoning += s.reasoning, out.content += s.content; };
  size_t at = 0;
  for (size_t c : cuts) take(p.push(text.substr(at, c - at))), at = c;
  take(p.push(text.substr(at)));
  take(p.finish());
  return out;
}

Split split_all_ways(ThinkStart start, std::string_view text) {
  const Split whole = split(start, text, {});
  for (size_t i = 1; i < text.size(); ++i) EXPECT_EQ(split(start, text, {i}), whole) << "cut at " << i;
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  EXPECT_EQ(split(start, text, bytes), whole) << "byte by byte";
  return whole;
}

TEST(Gemma4Thought, ThinksThenAnswers) {
  const Split s =
      split_all_ways(ThinkStart::maybe, "<|channel>thought\nI'm\nthinking<channel|>Hello, world!\nWhat's up?");
  EXPECT_EQ(s.reasoning, "I'm\nthinking");
  EXPECT_EQ(s.content, "Hello, world!\nWhat's up?");
  // An empty thought (a thinking budget of 0 closes it at once).
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "<|channel>thought<channel|>Hi"), (Split{"", "Hi"}));
  // A call after the thought is content, for the tool-call parser.
  const std::string call = "<|tool_call>call:f{}<tool_call|>";
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "<|channel>thought\nplan\n<channel|>" + call), (Split{"plan", call}));
}

TEST(Gemma4Thought, NotThinkingIsContent) {
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "Hello <|channel>thought x<channel|>"),
            (Split{"", "Hello <|channel>thought x<channel|>"}));
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "<|chan"), (Split{"", "<|chan"}));
  // Qwen's tags mean nothing here.
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "<think>a</think>b"), (Split{"", "<think>a</think>b"}));
  EXPECT_EQ(split_all_ways(ThinkStart::closed, "<|channel>thought\na<channel|>b"),
            (Split{"", "<|channel>thought\na<channel|>b"}));
}

TEST(Gemma4Thought, StrayMarkupEndingTheAnswerIsDropped) {
  const std::string thought = "<|channel>thought\nhm<channel|>";
  for (const char* tail : {"<channel|>", "<|channel>thought\n<channel|>", "<|channel>thought\n<channel|>\n",
                           "<|channel><channel|>", "<channel|>  \n"}) {
    EXPECT_EQ(split_all_ways(ThinkStart::maybe, thought + "Hello" + tail), (Split{"hm", "Hello"})) << tail;
    EXPECT_EQ(split_all_ways(ThinkStart::maybe, std::string("Hi") + tail), (Split{"", "Hi"})) << tail;
  }
  // Before more text, or not quite that markup, it is text.
  for (const std::string& content :
       std::vector<std::string>{"Hello<channel|> more", "Hello<|channel>thought\nx<channel|>", "a <b> c <",
                                "Hello<|channel>thoughts<channel|>", "x<|chan", "x<channel|"})
    EXPECT_EQ(split_all_ways(ThinkStart::maybe, thought + content), (Split{"hm", content})) << content;
  // A <channel|> that closes a channel the content opened is text; one after it is stray again.
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, thought + "A<|channel>x<channel|>B<channel|>\n"),
            (Split{"hm", "A<|channel>x<channel|>B"}));
  const std::string far = "Hi<channel|>" + std::string(kMaxThinkSpace + 1, ' ');
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, thought + far), (Split{"hm", far}));
  // A prompt that closed the thinking: the output as written.
  EXPECT_EQ(split_all_ways(ThinkStart::closed, "Hi<channel|>"), (Split{"", "Hi<channel|>"}));
}

TEST(Gemma4Thought, CutOffAndInside) {
  // max_tokens inside the thought: reasoning only, a cut-off close tag dropped.
  EXPECT_EQ(split_all_ways(ThinkStart::maybe, "<|channel>thought\nhmm <chann"), (Split{"hmm", ""}));
  // A prompt that opened the thought (a continued one).
  EXPECT_EQ(split_all_ways(ThinkStart::inside, "more\n<channel|>Done"), (Split{"more", "Done"}));
}

TEST(Gemma4Thought, PromptStateNamesAndTags) {
  // The template's generation prompt: thinking off writes an empty thought, on leaves it to the model.
  EXPECT_EQ(think_start_of("<|turn>model\n<|channel>thought\n<channel|>"), ThinkStart::closed);
  EXPECT_EQ(think_start_of("<|turn>model\n"), ThinkStart::maybe);
  EXPECT_EQ(think_start_of("<|turn>model\n<|channel>thought\n"), ThinkStart::inside);
  EXPECT_EQ(reasoning_format_from_name("gemma4"), ReasoningFormat::gemma4);
  EXPECT_EQ(reasoning_format_name(ReasoningFormat::gemma4), "gemma4");
  EXPECT_EQ(reasoning_open_tag(ReasoningFormat::gemma4), "<|channel>thought");
  EXPECT_EQ(reasoning_close_tag(ReasoningFormat::gemma4), "<channel|>");
  EXPECT_TRUE(thinking_optional(ReasoningFormat::gemma4));
}

TEST(Gemma4, DetectsBothFormatsFromTheRealTemplate) {
  const auto dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests" / "chat" / "templates";
  const std::string t = testing::read_file((dir / "google--gemma-4-31B-it.jinja").string());
  EXPECT_EQ(detect_format(t), Format::gemma4);
  EXPECT_EQ(detect_reasoning_format(t), ReasoningFormat::gemma4);
  // Gemma 3's template has neither.
  const std::string g3 = testing::read_file((dir / "lenml-gemma3.jinja").string());
  EXPECT_FALSE(detect_format(g3));
  EXPECT_FALSE(detect_reasoning_format(g3));
}

}  // namespace gemma4_test
}  // namespace pagoda::toolcall
