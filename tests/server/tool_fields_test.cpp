// The tool-calling pieces of a chat request and response, without a server:
// field validation, what the template receives, continue_final_message, the
// forced-choice schema, and parsed calls in whole messages and stream chunks.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/tool_constraint.h"
#include "server/tool_fields.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "ping"}}])");

std::string param_of(const ojson& body) {
  try {
    parse_tool_request(body, toolcall::Format::hermes);
  } catch (const ApiError& e) {
    return e.param;
  }
  return "";
}

TEST(ToolFields, ChoiceDefaultsAndParser) {
  ToolRequest r = parse_tool_request({{"tools", kTools}}, toolcall::Format::hermes);
  EXPECT_EQ(r.choice, ToolChoice::automatic);
  EXPECT_EQ(r.parser, toolcall::Format::hermes);
  r = parse_tool_request({{"tools", kTools}, {"tool_choice", "none"}}, toolcall::Format::hermes);
  EXPECT_FALSE(r.parser);  // none: the output is not parsed
  r = parse_tool_request(ojson::object(), toolcall::Format::hermes);
  EXPECT_EQ(r.choice, ToolChoice::none);
  r = parse_tool_request({{"tools", kTools},
                          {"tool_choice", {{"type", "function"}, {"function", {{"name", "ping"}}}}},
                          {"parallel_tool_calls", false}},
                         std::nullopt);
  EXPECT_EQ(r.choice, ToolChoice::named);
  EXPECT_EQ(r.function, "ping");
  EXPECT_FALSE(r.parallel);
}

TEST(ToolFields, BadFieldsName400s) {
  EXPECT_EQ(param_of({{"tools", "x"}}), "tools");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", ""}}}}}}}), "tools");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 3}}}}}}}), "tools");
  EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", "always"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}}),
            "tool_choice");
  EXPECT_EQ(param_of({{"tool_choice", "required"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", kTools}, {"parallel_tool_calls", 1}}), "parallel_tool_calls");
  EXPECT_EQ(param_of({{"functions", kTools}}), "functions");
  // A "type" of another JSON type is a 400 too, not nlohmann's type_error (found by the fuzzer).
  EXPECT_EQ(param_of(ojson::parse(R"({"tools": [{"type": {"name": "f"}, "function": {"name": "f"}}]})")), "tools");
  ojson named_by_array = {{"tools", kTools}};
  named_by_array["tool_choice"] = ojson::parse(R"({"type": [1], "function": {"name": "ping"}})");
  EXPECT_EQ(param_of(named_by_array), "tool_choice");
}

TEST(ToolFields, MessagesForTheTemplate) {
  const ojson body = ojson::parse(R"({"messages": [
    {"role": "developer", "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "brief"}]},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "cold"}],
    "chat_template_kwargs": {"enable_thinking": false}})");
  bool cont = true;
  const ChatRenderRequest r = parse_render_request(body, ToolRequest{}, cont);
  EXPECT_FALSE(cont);
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "be brief");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"], ojson({{"city", "Oslo"}}));  // a dict, as vLLM
  EXPECT_EQ(r.kwargs["enable_thinking"], false);

  auto refused = [](const char* text) {
    bool c;
    try {
      parse_render_request(ojson::parse(text), ToolRequest{}, c);
    } catch (const ApiError& e) {
      return e.param;
    }
    return std::string();
  };
  EXPECT_EQ(refused(R"({"messages": [{"role": "tool", "content": "x"}]})"), "messages");
  EXPECT_EQ(refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
    "arguments": "{oops"}}]}]})"),
            "messages");
  EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true,
    "add_generation_prompt": true})"),
            "continue_final_message");
  EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}], "chat_template": 5})"), "chat_template");
}

TEST(ToolFields, ContinueFinalMessage) {
  bool cont = false;
  const ojson body = ojson::parse(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Once upon"}],
          "continue_final_message": true})");
  const ChatRenderRequest r = parse_render_request(body, ToolRequest{}, cont);
  EXPECT_TRUE(cont);
  EXPECT_FALSE(r.add_generation_prompt);
  EXPECT_EQ(cut_after_final_message("<u>hi</u><a>Once upon</a>\n", r.messages), "<u>hi</u><a>Once upon");
  EXPECT_THROW(cut_after_final_message("<u>hi</u>", r.messages), ApiError);
  const ojson spaced = ojson::parse(R"([{"role": "assistant", "content": " Once upon \n"}])");
  EXPECT_EQ(cut_after_final_message("<a>Once upon</a>", spaced), "<a>Once upon");
}

TEST(ToolConstraint, ForcedSchemas) {
  ToolRequest r = parse_tool_request(
      {{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
      std::nullopt);
  EXPECT_EQ(forced_tool_schema(r), kTools[0]["function"]["parameters"]);
  r = parse_tool_request({{"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}},
                         std::nullopt);
  const ojson s = forced_tool_schema(r);
  EXPECT_EQ(s["maxItems"], 1);
  EXPECT_EQ(s["items"]["anyOf"].size(), 2u);
  EXPECT_EQ(s["items"]["anyOf"][1]["properties"]["parameters"], ojson({{"type", "object"}}));  // no parameters given
  EXPECT_EQ(forced_tool_constraint(parse_tool_request({{"tools", kTools}}, std::nullopt), {}), nullptr);
}

// A hermes model's output: content first, then a call; whole and streamed.
TEST(ToolOutput, HermesWholeAndStreamed) {
  GenerationRequest req;
  req.api = Api::chat;
  req.tools = parse_tool_request({{"tools", kTools}}, toolcall::Format::hermes);
  const std::string text =
      "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";

  ChoiceState whole;
  whole.text = text;
  whole.finish = FinishReason::stop;
  json message = {{"role", "assistant"}, {"content", text}};
  json finish = "stop";
  tool_message(req.tools, whole, message, finish);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(message["content"], "Sure.\n");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city":"Oslo"})");

  ChoiceState c;
  std::string content, args, name;
  size_t pieces = 0;
  json last_finish;
  for (size_t i = 0; i < text.size(); i += 7) {
    RequestOutput out;
    out.text = text.substr(i, 7);
    if (i + 7 >= text.size()) out.finish = FinishReason::stop;
    for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr)) {
      const json& ch = chunk["choices"][0];
      if (ch["delta"].contains("content")) content += ch["delta"]["content"].get<std::string>();
      if (ch["delta"].contains("tool_calls")) {
        // OpenAI's shape: id, type, name and "" first, then only index and arguments pieces.
        const json& d = ch["delta"]["tool_calls"][0];
        if (d.contains("id")) {
          EXPECT_EQ(d["type"], "function");
          EXPECT_EQ(d["function"]["arguments"], "");
          EXPECT_TRUE(name.empty());
          name = d["function"]["name"];
        } else {
          EXPECT_EQ(d.size(), 2u) << d;
          EXPECT_EQ(d["function"].size(), 1u) << d;
          EXPECT_FALSE(name.empty());
          ++pieces;
        }
        args += d["function"]["arguments"].get<std::string>();
      }
      if (!ch["finish_reason"].is_null()) last_finish = ch["finish_reason"];
    }
  }
  EXPECT_EQ(content, "Sure.\n");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(args, R"({"city":"Oslo"})");
  EXPECT_GT(pieces, 1u);  // the arguments streamed as they arrived, 7 bytes at a time
  EXPECT_EQ(last_finish, "tool_calls");
}

// A named function's output streams as one call in pieces; cut off by
// max_tokens it stays a call (finish "length"), whole and streamed alike.
// Finished, it ends with "stop", not "tool_calls", as OpenAI answers a named choice.
TEST(ToolOutput, NamedFunctionStreamsInPieces) {
  GenerationRequest req;
  req.api = Api::chat;
  req.tools = parse_tool_request(
      {{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
      std::nullopt);
  const std::string text = R"({"city": "Oslo", "note": "a b"})";
  for (size_t len : {text.size(), size_t{12}}) {
    const FinishReason why = len == text.size() ? FinishReason::stop : FinishReason::length;
    ChoiceState whole;
    whole.text = text.substr(0, len);
    whole.finish = why;
    json message = {{"role", "assistant"}, {"content", whole.text}};
    json finish = why == FinishReason::stop ? "stop" : "length";
    tool_message(req.tools, whole, message, finish);
    ASSERT_EQ(message["tool_calls"].size(), 1u);
    EXPECT_EQ(message["content"], nullptr);
    EXPECT_EQ(finish, why == FinishReason::stop ? "stop" : "length");
    const std::string args = message["tool_calls"][0]["function"]["arguments"];
    EXPECT_EQ(args, why == FinishReason::stop ? R"({"city":"Oslo","note":"a b"})" : R"({"city":"Os)");

    ChoiceState c;
    std::string joined;
    json streamed_finish;
    size_t chunks = 0;
    for (size_t i = 0; i < len; i += 4) {
      RequestOutput out;
      out.text = text.substr(i, std::min<size_t>(4, len - i));
      if (i + 4 >= len) out.finish = why;
      for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr)) {
        if (!chunk["choices"][0]["finish_reason"].is_null()) streamed_finish = chunk["choices"][0]["finish_reason"];
        const json& delta = chunk["choices"][0]["delta"];
        EXPECT_FALSE(delta.contains("content")) << delta;
        if (delta.contains("tool_calls"))
          joined += delta["tool_calls"][0]["function"]["arguments"].get<std::string>(), ++chunks;
      }
    }
    EXPECT_EQ(joined, args);
    EXPECT_EQ(streamed_finish, finish);
    EXPECT_GT(chunks, 2u);  // the name, then the arguments in more than one piece
  }
}

// parallel_tool_calls false under auto: a model that writes two calls gets
// only the first, whole and streamed.
TEST(ToolOutput, ParallelFalseKeepsTheFirstCallOnly) {
  const std::string call = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
  for (bool parallel : {true, false}) {
    ojson body = {{"tools", kTools}, {"parallel_tool_calls", parallel}};
    const ToolRequest r = parse_tool_request(body, toolcall::Format::hermes);
    ChoiceState whole;
    whole.text = call + "\n" + call;
    whole.finish = FinishReason::stop;
    json message = {{"role", "assistant"}, {"content", whole.text}};
    json finish = "stop";
    tool_message(r, whole, message, finish);
    EXPECT_EQ(message["tool_calls"].size(), parallel ? 2u : 1u);

    GenerationRequest req;
    req.api = Api::chat;
    req.tools = r;
    ChoiceState c;
    size_t ids = 0;
    RequestOutput out;
    out.text = whole.text;
    out.finish = FinishReason::stop;
    for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr))
      if (chunk["choices"][0]["delta"].contains("tool_calls"))
        ids += chunk["choices"][0]["delta"]["tool_calls"][0].contains("id");
    EXPECT_EQ(ids, parallel ? 2u : 1u);
  }
}

}  // namespace
}  // namespace pagoda::server
