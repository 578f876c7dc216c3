// Tool calling through a built-in family over real HTTP: stories260K has no
// chat template, so it is served with `plain`, which renders tools in the
// generic layout and reads answers with the hermes parser. Requests with
// tools and tool_choice auto, required or a named function succeed, and the
// prompt is exactly the rendering chat_template.h documents.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "server/http_client.h"
#include "toolcall/tool_call_parser.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
    "required": ["city"], "additionalProperties": false}}}])");
const json kMessages = json::parse(R"([{"role": "user", "content": "Weather in Paris?"}])");

json chat(uint16_t port, json body) {
  body["messages"] = body.value("messages", kMessages);
  if (!body.contains("tools")) body["tools"] = kTools;
  body["temperature"] = 0;
  body["max_tokens"] = body.value("max_tokens", 60);
  const HttpResponse r = http_post(port, "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json() : json::object();
}

// The forced call: its arguments are JSON text naming one of the enum cities
// (the enum keeps the greedy tiny model's output short).
void expect_weather_call(json r, const char* finish) {  // a copy: operator[] on a missing field gives null, not UB
  json& call = r["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args == json({{"city", "Paris"}}) || args == json({{"city", "Rome"}})) << args;
  EXPECT_EQ(r["choices"][0]["finish_reason"], finish);
}

// Each family's layout writes an assistant's call in the format of the parser
// `auto` picks for it, so a model that answers as its history shows is read.
TEST(ServerBuiltinTools, EachFamilysParserReadsTheCallsItsLayoutWrites) {
  const nlohmann::ordered_json tools(kTools);
  const std::vector<ChatMessage> question = {{"user", "Q"}};
  std::vector<ChatMessage> answered = question;
  answered.push_back({"assistant", "", {{"get_weather", {{"city", "Paris"}}}}});
  for (const ChatTemplate t : {ChatTemplate::chatml, ChatTemplate::llama2, ChatTemplate::mistral, ChatTemplate::llama3,
                               ChatTemplate::zephyr, ChatTemplate::gemma, ChatTemplate::phi3, ChatTemplate::plain}) {
    SCOPED_TRACE(std::string(chat_template_name(t)));
    const std::string asked = render_chat(t, question, {"<s>", "</s>", true}, tools);
    const std::string full = render_chat(t, answered, {"<s>", "</s>", false}, tools);
    ASSERT_TRUE(full.starts_with(asked)) << asked << "\n---\n" << full;
    std::string answer = full.substr(asked.size());
    for (const char* end : {"<|im_end|>", "<|eot_id|>", "</s>", "<end_of_turn>", "<|end|>"})
      answer = answer.substr(0, answer.find(end));
    const auto format = toolcall::format_from_name(chat_template_tool_format(t));
    ASSERT_TRUE(format);
    const toolcall::ParsedOutput out = toolcall::parse_all(*format, answer);
    ASSERT_EQ(out.calls.size(), 1u) << answer;
    EXPECT_EQ(out.calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(out.calls[0].arguments), json({{"city", "Paris"}}));
  }
}

TEST(ServerBuiltinTools, PlainServesToolsAutoRequiredAndNamed) {
  ServerProcess s;
  // auto: the prompt is the documented rendering (same tokens as a completion of it).
  json r = chat(s.port(), {{"tool_choice", "auto"}, {"max_tokens", 4}});
  const std::string prompt =
      render_chat(ChatTemplate::plain, chat_messages_from_json(kMessages), {}, nlohmann::ordered_json(kTools));
  ASSERT_NE(prompt.find("<tools>\n"), std::string::npos);
  json same =
      http_post(s.port(), "/v1/completions", {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}}).json();
  EXPECT_EQ(r["usage"]["prompt_tokens"], same["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["choices"][0]["message"]["content"], same["choices"][0]["text"]);

  // One call: the greedy tiny model would fill the context with more.
  // 78 tokens: what the 512-token context leaves; the call in hermes markup takes 74.
  expect_weather_call(chat(s.port(), {{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"max_tokens", 78}}),
                      "tool_calls");
  expect_weather_call(chat(s.port(), {{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                                      {"max_tokens", 78}}),
                      "stop");

  // A call and its result in the history render too (as text in the generic layout).
  const json history = json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "21 C"}])");
  // (A one-line tool keeps it inside stories260K's 512-token context.)
  const json small = json::parse(R"([{"type": "function", "function": {"name": "get_weather"}}])");
  json before = chat(s.port(), {{"tools", small}, {"tool_choice", "auto"}, {"max_tokens", 4}});
  json after = chat(s.port(), {{"messages", history}, {"tools", small}, {"tool_choice", "auto"}, {"max_tokens", 4}});
  EXPECT_GT(after["usage"]["prompt_tokens"].get<int>(), before["usage"]["prompt_tokens"].get<int>() + 20);
  EXPECT_TRUE(eventually([&] { return engine_idle(s.port()); }));
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
