// gpt-oss's harmony output (toolcall/harmony.h): each case whole and streamed
// split at every byte boundary (the same reasoning, content and calls), and
// byte by byte; analysis only, analysis then final, analysis then a tool
// call (the recipient after or before the channel), two calls, preambles,
// truncated output, malformed markup and text that is not harmony at all.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "toolcall/harmony.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall {
namespace harmony_test {  // named: the suite is one unity batch with parser_test.cpp

struct Want {
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

// Pushes `text` in the pieces `cuts` makes, checking the delta shape: a call's
// first delta has its id and name, later ones arguments only.
ParsedOutput run(std::string_view text, const std::vector<size_t>& cuts, bool calls = true) {
  ToolCallParser p = ToolCallParser::harmony(calls);
  ParsedOutput out;
  auto take = [&](const ParseStep& s) {
    out.content += s.content;
    out.reasoning += s.reasoning;
    for (const auto& d : s.calls) {
      const bool first = d.index >= out.calls.size();
      EXPECT_EQ(d.index, first ? out.calls.size() : out.calls.size() - 1);
      EXPECT_EQ(first, !d.id.empty());
      EXPECT_EQ(first, !d.name.empty());
      EXPECT_EQ(first, d.arguments.empty());
      if (first) {
        EXPECT_TRUE(d.id.starts_with("call_")) << d.id;
      }
      apply_deltas(out.calls, {d});
    }
  };
  size_t at = 0;
  for (size_t cut : cuts) {
    take(p.push(text.substr(at, cut - at)));
    at = cut;
  }
  take(p.push(text.substr(at)));
  take(p.finish());
  return out;
}

void expect_output(const ParsedOutput& got, const Want& want, const std::string& how) {
  EXPECT_EQ(got.reasoning, want.reasoning) << how;
  EXPECT_EQ(got.content, want.content) << how;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << how;
  for (size_t i = 0; i < want.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].first) << how;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << how;
  }
}

// Whole, split once at every byte boundary, and one byte at a time.
void expect_parse(std::string_view text, const Want& want, bool calls = true) {
  expect_output(run(text, {}, calls), want, "whole");
  for (size_t cut = 0; cut <= text.size(); ++cut)
    expect_output(run(text, {cut}, calls), want, "split at " + std::to_string(cut));
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  expect_output(run(text, every, calls), want, "byte by byte");
  // parse_all is the same machine.
  const ParsedOutput all = parse_all(Format::harmony, text);
  if (calls) expect_output(all, want, "parse_all");
}

TEST(Harmony, AnalysisOnly) {
  expect_parse("<|channel|>analysis<|message|>The user greets me. I greet back.<|end|>",
               {"The user greets me. I greet back.", "", {}});
}

TEST(Harmony, AnalysisThenFinal) {
  expect_parse(
      "<|channel|>analysis<|message|>Simple sum: 4.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
      {"Simple sum: 4.", "2 + 2 = 4.", {}});
  // With the <|return|> the output has when the stop token is shown.
  expect_parse("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b<|return|>",
               {"a", "b", {}});
}

TEST(Harmony, AnalysisThenToolCall) {
  expect_parse(
      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": 2}<|call|>",
      {"Need the weather.", "", {{"get_weather", "{\"city\": \"Paris\", \"days\": 2}"}}});
}

TEST(Harmony, RecipientBeforeTheChannel) {
  // As the template renders earlier calls: the recipient in the role part, " json" as the type.
  expect_parse(" to=functions.get_time<|channel|>commentary json<|message|>{\"utc\":true}",
               {"", "", {{"get_time", "{\"utc\":true}"}}});
  expect_parse(
      "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.lookup<|channel|>commentary "
      "json<|message|> {\"q\": \"a b\"} \n",
      {"x", "", {{"lookup", "{\"q\": \"a b\"}"}}});
}

TEST(Harmony, TwoToolCalls) {
  expect_parse(
      "<|channel|>commentary to=functions.a <|constrain|>json<|message|>{\"x\":1}<|call|>"
      "<|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{}<|call|>",
      {"", "", {{"a", "{\"x\":1}"}, {"b", "{}"}}});
}

TEST(Harmony, EmptyArgumentsAreAnEmptyObject) {
  expect_parse("<|channel|>commentary to=functions.ping <|constrain|>json<|message|>  <|call|>",
               {"", "", {{"ping", "{}"}}});
}

TEST(Harmony, PreambleIsContentAndStrayCommentaryIsIgnored) {
  // A commentary message without a recipient is meant for the user.
  expect_parse(
      "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.f <|constrain|>json<|message|>{}",
      {"", "Let me check.", {{"f", "{}"}}});
  // gpt-oss sometimes writes a channel first: the last one counts.
  expect_parse("<|channel|>commentary to=assistant<|channel|>analysis<|message|>hmm<|end|>", {"hmm", "", {}});
}

TEST(Harmony, MessagesOfOneFieldAreJoined) {
  expect_parse(
      "<|channel|>analysis<|message|>one<|end|><|start|>assistant<|channel|>analysis<|message|>two<|end|>"
      "<|start|>assistant<|channel|>final<|message|>three",
      {"one\ntwo", "three", {}});
}

TEST(Harmony, BuiltinToolsAndOtherRolesAreReasoning) {
  expect_parse(
      "<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}<|call|>"
      "<|start|>browser.search to=assistant<|channel|>analysis<|message|>results<|end|>",
      {"{\"query\":\"x\"}\nresults", "", {}});
}

TEST(Harmony, CallsOffMakesCallsContent) {
  expect_parse(
      "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.f <|constrain|>json<|message|>{\"a\":1}",
      {"r", "{\"a\":1}", {}}, /*calls=*/false);
}

TEST(Harmony, TruncatedOutputKeepsWhatWasSaid) {
  // max_tokens mid-analysis, mid-header, mid-marker, mid-arguments.
  expect_parse("<|channel|>analysis<|message|>I am thinking about", {"I am thinking about", "", {}});
  expect_parse("<|channel|>analysis<|message|>done<|end|><|start|>assistant<|channel|>fin", {"done", "", {}});
  expect_parse("<|channel|>analysis<|message|>done<|en", {"done<|en", "", {}});
  expect_parse("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"city\": \"Pa",
               {"", "", {{"f", "{\"city\": \"Pa"}}});
  expect_parse("<|channel|>ana", {"", "", {}});
  expect_parse("", {"", "", {}});
}

TEST(Harmony, MissingEndAndStrayText) {
  // <|start|> or <|channel|> ends an open message.
  expect_parse("<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final<|message|>b", {"a", "b", {}});
  expect_parse("<|channel|>analysis<|message|>a<|channel|>final<|message|>b", {"a", "b", {}});
  // Text between messages is content; whitespace there is dropped.
  expect_parse("<|channel|>final<|message|>a<|end|>\n stray<|end|>  <|start|>assistant<|channel|>final<|message|>b",
               {"", "a\nstray\nb", {}});
  // A <|message|> inside a message is its text.
  expect_parse("<|channel|>final<|message|>x<|message|>y", {"", "x<|message|>y", {}});
}

TEST(Harmony, TextThatIsNotHarmonyIsContent) {
  expect_parse("Hello there, no markup at all.", {"", "Hello there, no markup at all.", {}});
  expect_parse("to be or not", {"", "to be or not", {}});
  expect_parse("a < b and <|c", {"", "a < b and <|c", {}});
  // A header holding a byte no header has, or a '<' that begins no marker.
  expect_parse("<|channel|>analysis\nthinking", {"", "<|channel|>analysis\nthinking", {}});
  expect_parse("<|channel|>final<b><|message|>x", {"", "<|channel|>final<b><|message|>x", {}});
  // ... run on with the content before it: no new message began.
  expect_parse("<|channel|>final<|message|>a<|end|><|channel|>x\ny", {"", "a<|channel|>x\ny", {}});
}

TEST(Harmony, LongHeaderIsContent) {
  const std::string name(kMaxHeaderBytes, 'n');
  const std::string text = "<|channel|>commentary to=functions." + name + "<|message|>{}";
  const ParsedOutput out = run(text, {});
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, text);  // not a header: the text as it came
  expect_output(run(text, {100, 700, 1030}), {"", text, {}}, "split");
}

TEST(Harmony, AtMostMaxCallsCalls) {
  std::string text;
  for (size_t i = 0; i < kMaxCalls + 2; ++i)
    text += "<|start|>assistant<|channel|>commentary to=functions.f json<|message|>{}<|call|>";
  const ParsedOutput out = run(text, {});
  EXPECT_EQ(out.calls.size(), kMaxCalls);
  EXPECT_EQ(out.content, "{}\n{}");
}

TEST(Harmony, ArgumentsStreamInPieces) {
  ToolCallParser p = ToolCallParser::harmony(true);
  auto s = p.push("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\"");
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].name, "f");
  EXPECT_EQ(s.calls[1].arguments, "{\"a\"");
  s = p.push(": 1 ");  // the trailing space is held: it may end the arguments
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].arguments, ": 1");
  s = p.push("}");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].arguments, " }");
  EXPECT_TRUE(p.finish().calls.empty());
  EXPECT_EQ(p.calls(), 1u);
}

TEST(Harmony, ReasoningStreamsAsItArrives) {
  ToolCallParser p = ToolCallParser::harmony(true);
  EXPECT_EQ(p.push("<|channel|>analysis<|message|>Thin").reasoning, "Thin");
  EXPECT_EQ(p.push("king<|").reasoning, "king");  // "<|" may begin a marker: held
  const ParseStep s = p.push("end|><|start|>assistant<|channel|>final<|message|>Hi");
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "Hi");
}

TEST(Harmony, NamedFormatAndDetection) {
  EXPECT_EQ(format_from_name("openai"), Format::harmony);
  EXPECT_EQ(format_from_name("harmony"), Format::harmony);
  EXPECT_EQ(format_name(Format::harmony), "openai");
  EXPECT_NE(format_names().find("openai"), std::string::npos);
  EXPECT_EQ(detect_format("{{- \"<|start|>assistant<|channel|>final<|message|>\" + message.content }}"),
            Format::harmony);
  // A forced call, as the grammar writes it, reads back as a call.
  const CallMarkup m = *call_markup(Format::harmony);
  const std::string forced = m.begin + m.head_before + "f" + m.head_after + "{\"a\":1}" + m.tail + m.separator +
                             m.head_before + "g" + m.head_after + "{}" + m.tail + m.end;
  expect_parse(forced, {"", "", {{"f", "{\"a\":1}"}, {"g", "{}"}}});
}

}  // namespace harmony_test
}  // namespace pagoda::toolcall
