// The <think> reasoning splitter (toolcall/think.h): each case whole, split at
// every byte boundary and byte by byte (the same reasoning and content);
// qwen3 with and without the tag, deepseek_r1 without a start tag, an open
// or closed prompt, empty and unterminated reasoning, cut-off tags, text
// that looks nested, long whitespace; the prompt's state and the template
// detection on real templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "toolcall/think.h"

namespace pagoda::toolcall {
namespace think_test {  // named: the suite is one unity batch with parser_test.cpp

struct Split {
  std::string reasoning, content;
  bool operator==(const Split&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Split& s) {
  return os << "{reasoning: \"" << s.reasoning << "\", content: \"" << s.content << "\"}";
}

Split run(ReasoningFormat f, ThinkStart start, std::string_view text, const std::vector<size_t>& cuts) {
  ThinkSplitter p(f, start);
  Split out;
  size_t at = 0;
  auto take = [&](const SplitStep& s) {
    out.reasoning += s.reasoning;
    out.content += s.content;
  };
  for (size_t c : cuts) {
    take(p.push(text.substr(at, c - at)));
    at = c;
  }
  take(p.push(text.substr(at)));
  take(p.finish());
  return out;
}

// Whole, every two-piece split, and byte by byte: all the same.
Split split_all_ways(ReasoningFormat f, ThinkStart start, std::string_view text) {
  const Split whole = run(f, start, text, {});
  for (size_t i = 1; i < text.size(); ++i) EXPECT_EQ(run(f, start, text, {i}), whole) << "cut at " << i;
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  EXPECT_EQ(run(f, start, text, bytes), whole) << "byte by byte";
  return whole;
}

constexpr auto qwen3 = ReasoningFormat::qwen3;
constexpr auto r1 = ReasoningFormat::deepseek_r1;

TEST(ThinkSplitter, Qwen3ThinksThenAnswers) {
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>\nLet me see.\nYes.\n</think>\n\nHello!"),
            (Split{"Let me see.\nYes.", "Hello!"}));
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "\n<think>a b</think>c \n"), (Split{"a b", "c \n"}));
}

TEST(ThinkSplitter, Qwen3WithoutTheTagIsContent) {
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "Hello </think> there"), (Split{"", "Hello </think> there"}));
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<thinking>x"), (Split{"", "<thinking>x"}));
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "  <thi"), (Split{"", "  <thi"}));  // ended undecided
}

TEST(ThinkSplitter, NoStartTag) {
  // DeepSeek-R1: the output starts inside the reasoning.
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, "I reason.\n</think>\n\nThe answer."),
            (Split{"I reason.", "The answer."}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, "<think>\nI reason.</think>Answer"), (Split{"I reason.", "Answer"}));
  // A template that opened <think> in the prompt (Qwen3.5, the R1 distills).
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::inside, "I reason.</think>\n\nAnswer"), (Split{"I reason.", "Answer"}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::inside, "x</think>y"), (Split{"x", "y"}));
}

TEST(ThinkSplitter, EmptyThink) {
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>\n\n</think>\n\nHi"), (Split{"", "Hi"}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, "</think>Hi"), (Split{"", "Hi"}));
}

TEST(ThinkSplitter, UnterminatedIsReasoningOnly) {
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>\nStill thinking about it"),
            (Split{"Still thinking about it", ""}));
  // A tag cut off by max_tokens is markup: dropped, with the whitespace before it.
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>abc \n</thi"), (Split{"abc", ""}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, "<thi"), (Split{"", ""}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, ""), (Split{"", ""}));
}

TEST(ThinkSplitter, NestedLookingTextIsText) {
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>a<think>b</think>c</think>d"),
            (Split{"a<think>b", "c</think>d"}));
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>x </th ink</think>y"), (Split{"x </th ink", "y"}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::maybe, "<think><think>a</think>b"), (Split{"<think>a", "b"}));
}

TEST(ThinkSplitter, ClosedPromptIsAllContent) {
  // enable_thinking false: the template closed the reasoning; nothing is parsed.
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::closed, "<think>a</think>\n b"), (Split{"", "<think>a</think>\n b"}));
  EXPECT_EQ(split_all_ways(r1, ThinkStart::closed, "Plain answer."), (Split{"", "Plain answer."}));
}

TEST(ThinkSplitter, LongWhitespace) {
  const std::string ws(kMaxThinkSpace + 1, '\n');
  // Before the reasoning's end, a run too long to be the gap before the tag is kept.
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>a" + ws + "</think>b"), (Split{"a" + ws, "b"}));
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, "<think>a\n\n</think>b"), (Split{"a", "b"}));
  // Before a qwen3 <think>, such a run means the model is not thinking.
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, ws + "<think>a</think>b"), (Split{"", ws + "<think>a</think>b"}));
  const std::string short_ws(kMaxThinkSpace - 1, ' ');
  EXPECT_EQ(split_all_ways(qwen3, ThinkStart::maybe, short_ws + "<think>a</think>b"), (Split{"a", "b"}));
}

TEST(ThinkSplitter, StreamsReasoningAsItComesAndHoldsOnlyATagsBeginning) {
  ThinkSplitter p(qwen3, ThinkStart::maybe);
  EXPECT_EQ(p.push("<thi").reasoning, "");
  EXPECT_EQ(p.push("nk>Hmm, ").reasoning, "Hmm,");  // the space may precede </think>
  EXPECT_FALSE(p.in_content());
  EXPECT_EQ(p.push("ok </th").reasoning, " ok");
  const SplitStep s = p.push("ink>\n\nYes");
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "Yes");
  EXPECT_TRUE(p.in_content());
  EXPECT_EQ(p.push(" sir").content, " sir");
}

TEST(ThinkSplitter, PromptState) {
  EXPECT_EQ(think_start_of("<|im_start|>assistant\n"), ThinkStart::maybe);
  EXPECT_EQ(think_start_of("<|im_start|>assistant\n<think>\n"), ThinkStart::inside);
  EXPECT_EQ(think_start_of("<|im_start|>assistant\n<think>\n\n</think>\n\n"), ThinkStart::closed);
  EXPECT_EQ(think_start_of(""), ThinkStart::maybe);
}

std::string read_template(const std::string& name) {
  std::ifstream in(std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/chat/templates" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ThinkSplitter, DetectsTheFormatFromTemplates) {
  EXPECT_EQ(detect_reasoning_format(read_template("Qwen--Qwen3-0.6B.jinja")), ReasoningFormat::qwen3);
  EXPECT_EQ(detect_reasoning_format(read_template("Qwen--Qwen3.5-4B.jinja")), ReasoningFormat::qwen3);
  EXPECT_EQ(detect_reasoning_format(read_template("deepseek-ai--DeepSeek-R1.jinja")), ReasoningFormat::deepseek_r1);
  EXPECT_EQ(detect_reasoning_format(read_template("Qwen--Qwen2.5-7B-Instruct.jinja")), std::nullopt);
  EXPECT_EQ(detect_reasoning_format(read_template("openai--gpt-oss-120b.jinja")), std::nullopt);
  EXPECT_EQ(detect_reasoning_format(read_template("llama3.jinja")), std::nullopt);
}

TEST(ThinkSplitter, Names) {
  EXPECT_EQ(reasoning_format_from_name("qwen3"), ReasoningFormat::qwen3);
  EXPECT_EQ(reasoning_format_from_name("deepseek_r1"), ReasoningFormat::deepseek_r1);
  EXPECT_EQ(reasoning_format_from_name("none"), std::nullopt);
  EXPECT_EQ(reasoning_format_name(ReasoningFormat::deepseek_r1), "deepseek_r1");
}

}  // namespace think_test
}  // namespace pagoda::toolcall
