// gpt-oss's harmony through the chat request and response, without a server:
// reasoning_effort and an assistant turn's reasoning as the template gets
// them, and the output as a whole message (content, reasoning_content and
// reasoning, tool_calls, finish_reason) and as stream chunks (the same fields
// as deltas of their own), with tools, without, and cut off by max_tokens.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/tool_fields.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace harmony_fields_test {  // named: the suite's files share unity batches

using ojson = nlohmann::ordered_json;
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

struct Message {
  json message;
  json finish;
};

Message whole(const ToolRequest& r, const std::string& text, FinishReason why) {
  ChoiceState c;
  c.text = text;
  c.finish = why;
  Message m{{{"role", "assistant"}, {"content", text}}, finish_reason_json(why)};
  tool_message(r, c, m.message, m.finish);
  return m;
}

// The stream's deltas folded as a client folds them, `step` bytes at a time.
Message streamed(const ToolRequest& r, const std::string& text, FinishReason why, size_t step) {
  GenerationRequest req;
  req.api = Api::chat;
  req.tools = r;
  ChoiceState c;
  Message m{{{"role", "assistant"}}, nullptr};
  std::string content, reasoning;
  json calls = json::array();
  for (size_t i = 0; i < text.size() || i == 0; i += step) {
    RequestOutput out;
    out.text = text.substr(std::min(i, text.size()), step);
    if (i + step >= text.size()) out.finish = why;
    for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr)) {
      const json& ch = chunk["choices"][0];
      const json& d = ch["delta"];
      if (!ch["finish_reason"].is_null()) m.finish = ch["finish_reason"];
      if (d.contains("reasoning_content")) {
        EXPECT_EQ(d["reasoning_content"], d["reasoning"]);
        EXPECT_EQ(d.size(), 2u) << d;  // reasoning has deltas of its own
        reasoning += d["reasoning_content"].get<std::string>();
      }
      if (d.contains("content")) content += d["content"].get<std::string>();
      if (d.contains("tool_calls")) {
        const json& t = d["tool_calls"][0];
        if (t.contains("id"))
          calls.push_back({{"id", t["id"]}, {"type", t["type"]}, {"function", t["function"]}});
        else
          calls.back()["function"]["arguments"] =
              calls.back()["function"]["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
  }
  m.message["content"] = content.empty() ? json(nullptr) : json(content);
  m.message["reasoning_content"] = reasoning.empty() ? json(nullptr) : json(reasoning);
  if (!calls.empty()) m.message["tool_calls"] = calls;
  return m;
}

// Whole and streamed at several piece sizes: the same fields.
void expect_message(const ToolRequest& r, const std::string& text, FinishReason why, const json& content,
                    const json& reasoning, const std::vector<std::string>& call_args, const json& finish) {
  SCOPED_TRACE(text);
  const Message w = whole(r, text, why);
  EXPECT_EQ(w.message["content"], content);
  EXPECT_EQ(w.message["reasoning_content"], reasoning);
  EXPECT_EQ(w.message["reasoning"], reasoning);
  EXPECT_EQ(w.finish, finish);
  const json none = json::array();
  const json& calls = w.message.contains("tool_calls") ? w.message["tool_calls"] : none;
  ASSERT_EQ(calls.size(), call_args.size());
  for (size_t i = 0; i < call_args.size(); ++i) {
    EXPECT_EQ(calls[i]["type"], "function");
    EXPECT_EQ(calls[i]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[i]["function"]["arguments"], call_args[i]);
  }
  for (size_t step : {1, 3, 7, 64}) {
    const Message s = streamed(r, text, why, step);
    EXPECT_EQ(s.message["content"], content) << step;
    EXPECT_EQ(s.message["reasoning_content"], reasoning) << step;
    EXPECT_EQ(s.finish, finish) << step;
    const json& scalls = s.message.contains("tool_calls") ? s.message["tool_calls"] : none;
    ASSERT_EQ(scalls.size(), calls.size()) << step;
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(scalls[i]["function"], calls[i]["function"]) << step;
  }
}

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
