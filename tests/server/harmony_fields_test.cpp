// gpt-oss's harmony through the chat request and response, without a server:
// reasoning_effort and an assistant turn's reasoning as the template gets
// them, and the output as a whole message (content, reasoning_content and
// reasoning, tool_calls, finish_reason) and as stream chunks (the same fields
// as deltas of their own), with tools, without, and cut off by max_tokens.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_output_fold.h"
#include "server/tool_fields.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace harmony_fields_test {  // named: the suite's files share unity batches

using ojson = nlohmann::ordered_json;
using chat_fold::expect_message;
using toolcall::Format;

const ojson kHarmonyTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

ChatRenderRequest render_request(const ojson& body, std::optional<Format> parser) {
  bool continue_final = false;
  return parse_render_request(body, parse_tool_request(body, parser), continue_final);
}

std::string param_of_render(const ojson& body) {
  try {
    render_request(body, Format::harmony);
  } catch (const ApiError& e) {
    return e.param;
  }
  return "";
}

TEST(HarmonyFields, ReadWithOrWithoutTools) {
  ToolRequest r = parse_tool_request(ojson::object(), Format::harmony);
  EXPECT_TRUE(r.harmony);
  EXPECT_FALSE(r.parser);  // no tools: no calls
  EXPECT_TRUE(tool_output_active(r));
  r = parse_tool_request({{"tools", kHarmonyTools}}, Format::harmony);
  EXPECT_EQ(r.parser, Format::harmony);
  EXPECT_FALSE(parse_tool_request({{"tools", kHarmonyTools}}, Format::hermes).harmony);
}

TEST(HarmonyFields, ReasoningEffortIsATemplateVariable) {
  const ojson messages = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(render_request({{"messages", messages}, {"reasoning_effort", "high"}}, Format::harmony).kwargs,
            ojson({{"reasoning_effort", "high"}}));
  // Any template may read it, harmony or not.
  EXPECT_EQ(render_request({{"messages", messages}, {"reasoning_effort", "low"}}, Format::hermes).kwargs,
            ojson({{"reasoning_effort", "low"}}));
  // chat_template_kwargs says more precisely what the template gets.
  const ojson both = {{"messages", messages},
                      {"reasoning_effort", "low"},
                      {"chat_template_kwargs", {{"reasoning_effort", "medium"}, {"x", 1}}}};
  EXPECT_EQ(render_request(both, Format::harmony).kwargs, ojson({{"reasoning_effort", "medium"}, {"x", 1}}));
  EXPECT_TRUE(render_request({{"messages", messages}}, Format::harmony).kwargs.is_null());
  EXPECT_EQ(param_of_render({{"messages", messages}, {"reasoning_effort", "extreme"}}), "reasoning_effort");
  EXPECT_EQ(param_of_render({{"messages", messages}, {"reasoning_effort", 2}}), "reasoning_effort");
}

TEST(HarmonyFields, AssistantReasoningBecomesThinking) {
  const ojson body = ojson::parse(R"({"messages": [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": "Checking.", "reasoning_content": "Need a call.", "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny.", "reasoning": "Easy."},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}]})");
  const ojson m = render_request(body, Format::harmony).messages;
  EXPECT_EQ(m[1]["thinking"], "Need a call.");
  EXPECT_FALSE(m[1].contains("content"));  // the template refuses content beside thinking in a call turn
  EXPECT_EQ(m[3]["thinking"], "Easy.");    // vLLM's newer name
  EXPECT_EQ(m[3]["content"], "Sunny.");
  EXPECT_FALSE(m[4].contains("content"));  // null: left out
  EXPECT_FALSE(m[4].contains("thinking"));
  // Other templates get the messages as sent.
  const ojson plain = render_request(body, Format::hermes).messages;
  EXPECT_FALSE(plain[1].contains("thinking"));
  EXPECT_EQ(plain[1]["content"], "Checking.");
}

const std::string kAnalysis = "<|channel|>analysis<|message|>Need the weather.<|end|>";
const std::string kCall =
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}";
const std::string kFinal = "<|start|>assistant<|channel|>final<|message|>It is sunny.";

TEST(HarmonyOutput, ReasoningContentAndCalls) {
  const ToolRequest tools = parse_tool_request({{"tools", kHarmonyTools}}, Format::harmony);
  const ToolRequest bare = parse_tool_request(ojson::object(), Format::harmony);
  for (const ToolRequest* r : {&tools, &bare})
    expect_message(*r, kAnalysis + kFinal, FinishReason::stop, "It is sunny.", "Need the weather.", {}, "stop");
  expect_message(tools, kAnalysis + kCall, FinishReason::stop, nullptr, "Need the weather.", {"{\"city\":\"Oslo\"}"},
                 "tool_calls");
  // Without tools (or with tool_choice none) a call's text is content.
  expect_message(bare, kAnalysis + kCall, FinishReason::stop, "{\"city\":\"Oslo\"}", "Need the weather.", {}, "stop");
  const ToolRequest off = parse_tool_request({{"tools", kHarmonyTools}, {"tool_choice", "none"}}, Format::harmony);
  expect_message(off, kAnalysis + kCall, FinishReason::stop, "{\"city\":\"Oslo\"}", "Need the weather.", {}, "stop");
}

TEST(HarmonyOutput, CutOffByMaxTokensEndsCleanly) {
  const ToolRequest tools = parse_tool_request({{"tools", kHarmonyTools}}, Format::harmony);
  expect_message(tools, "<|channel|>analysis<|message|>Let me th", FinishReason::length, nullptr, "Let me th", {},
                 "length");
  expect_message(tools, kAnalysis + "<|start|>assistant<|chan", FinishReason::length, nullptr, "Need the weather.", {},
                 "length");
  expect_message(tools, kAnalysis + kCall.substr(0, kCall.size() - 6), FinishReason::length, nullptr,
                 "Need the weather.", {"{\"city\":\""}, "length");
  expect_message(tools, "", FinishReason::length, nullptr, nullptr, {}, "length");
  // Not harmony at all: content.
  expect_message(tools, "Just words.", FinishReason::stop, "Just words.", nullptr, {}, "stop");
}

}  // namespace harmony_fields_test
}  // namespace pagoda::server
