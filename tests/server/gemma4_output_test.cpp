// Gemma 4 through the chat response, without a server: its real template
// renders the generation prompt the reasoning splitter reads (thinking on:
// the model may open a thought; off: an empty thought is already closed)
// and a tool round trip as its own <|tool_response> blocks; its output
// (<|channel>thought .. <channel|>, <|tool_call>call:NAME{..}<tool_call|>)
// becomes reasoning_content, content and tool_calls, whole and streamed at
// several piece sizes, with tools, without, and cut off by max_tokens.
#include <gtest/gtest.h>

#include <filesystem>

#include "jinja/template.h"
#include "server/chat_output_fold.h"
#include "server/tool_constraint.h"
#include "server/tool_fields.h"
#include "server/tool_output.h"
#include "testing/build_paths.h"
#include "testing/shared_data.h"

namespace pagoda::server {
namespace gemma4_output_test {  // named: the suite's files share unity batches

using ojson = nlohmann::ordered_json;
using chat_fold::expect_message;
using toolcall::Format;
using toolcall::ReasoningFormat;
using toolcall::ThinkStart;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

std::string render(const ojson& messages, bool thinking, bool tools) {
  static const jinja::Template t(testing::read_file(
      (std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/chat/templates/google--gemma-4-31B-it.jinja").string()));
  ojson ctx = {{"messages", messages},
               {"add_generation_prompt", true},
               {"bos_token", "<bos>"},
               {"eos_token", "<turn|>"},
               {"enable_thinking", thinking}};
  if (tools) ctx["tools"] = kTools;
  return t.render(ctx);
}

TEST(Gemma4Prompt, ThinkingOnAndOff) {
  const ojson user = ojson::parse(R"([{"role": "user", "content": "Hi"}])");
  const std::string on = render(user, true, false), off = render(user, false, false);
  EXPECT_NE(on.find("<|think|>"), std::string::npos) << on;
  EXPECT_TRUE(on.ends_with("<|turn>model\n")) << on;
  EXPECT_EQ(toolcall::think_start_of(on), ThinkStart::maybe);
  EXPECT_TRUE(off.ends_with("<|channel>thought\n<channel|>")) << off;
  EXPECT_EQ(toolcall::think_start_of(off), ThinkStart::closed);
}

TEST(Gemma4Prompt, ToolMessagesRenderWithoutARewrite) {
  // OpenAI's form: the assistant's tool_calls, then a `tool` message. The
  // template pairs them itself (llama.cpp folds them into `tool_responses`
  // first; this template reads either), so the server passes them as they are.
  const ojson messages = ojson::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}])");
  const std::string p = render(messages, true, true);
  EXPECT_NE(p.find("<|tool>declaration:get_weather{description:<|\"|>Weather in a city.<|\"|>"), std::string::npos)
      << p;
  EXPECT_NE(p.find("<|turn>model\n<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
                   "<|tool_response>response:get_weather{value:<|\"|>{\"temp\": 21}<|\"|>}<tool_response|>"),
            std::string::npos)
      << p;
  // The model's turn goes on after the results: no new turn, thinking may open again.
  EXPECT_TRUE(p.ends_with("<tool_response|>")) << p;
  EXPECT_EQ(toolcall::think_start_of(p), ThinkStart::maybe);
}

ToolRequest request(bool tools, ThinkStart start = ThinkStart::maybe) {
  ToolRequest r = parse_tool_request(tools ? ojson{{"tools", kTools}} : ojson::object(), Format::gemma4);
  r.reasoning = ReasoningFormat::gemma4;
  r.think_start = start;
  return r;
}

const std::string kThought = "<|channel>thought\nNeed the weather.\n<channel|>";
const std::string kCall = "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>";

TEST(Gemma4Output, ReasoningContentAndCalls) {
  const ToolRequest tools = request(true), bare = request(false);
  for (const ToolRequest* r : {&tools, &bare})
    expect_message(*r, kThought + "It is sunny.", FinishReason::stop, "It is sunny.", "Need the weather.", {}, "stop");
  expect_message(tools, kThought + kCall, FinishReason::stop, nullptr, "Need the weather.", {R"({"city":"Oslo"})"},
                 "tool_calls");
  expect_message(tools, kThought + "Let me look." + kCall + kCall, FinishReason::stop, "Let me look.",
                 "Need the weather.", {R"({"city":"Oslo"})", R"({"city":"Oslo"})"}, "tool_calls");
  // Without tools a call's text is content; without a thought all is content.
  expect_message(bare, kThought + kCall, FinishReason::stop, kCall, "Need the weather.", {}, "stop");
  expect_message(tools, kCall, FinishReason::stop, nullptr, nullptr, {R"({"city":"Oslo"})"}, "tool_calls");
  // Thinking off: the prompt closed the thought, nothing is read as one.
  expect_message(request(true, ThinkStart::closed), "Sunny.", FinishReason::stop, "Sunny.", nullptr, {}, "stop");
}

TEST(Gemma4Output, CutOffByMaxTokens) {
  const ToolRequest tools = request(true);
  expect_message(tools, "<|channel>thought\nLet me th", FinishReason::length, nullptr, "Let me th", {}, "length");
  expect_message(tools, kThought + "<|tool_call>call:get_weather{city:<|\"|>Os", FinishReason::length,
                 "<|tool_call>call:get_weather{city:<|\"|>Os", "Need the weather.", {}, "length");
}

// A forced choice cannot be written in Gemma's syntax (a grammar from the
// tools' JSON Schemas writes JSON): it takes vLLM's plain JSON form, as pythonic does.
TEST(Gemma4Output, ForcedChoiceUsesThePlainJsonForm) {
  for (const char* choice : {"required", "named"}) {
    ojson body = {{"tools", kTools}, {"tool_choice", "required"}};
    if (std::string(choice) == "named")
      body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    const ToolRequest r = parse_tool_request(body, Format::gemma4);
    EXPECT_FALSE(forced_in_model_format(r)) << choice;
    EXPECT_EQ(forced_tool_spec(r).kind, grammar::ConstraintSpec::Kind::json_schema) << choice;
  }
}

}  // namespace gemma4_output_test
}  // namespace pagoda::server
