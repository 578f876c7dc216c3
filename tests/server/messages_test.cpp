// Anthropic's Messages API on a real server (stories260K): the message
// object, each request field's mapping into the chat pipeline (checked
// against /tokenize on the equivalent OpenAI chat body), forced tool use,
// stop sequences, the stream's event sequence, count_tokens, x-api-key and
// errors in Anthropic's shape.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http_client.h"
#include "server/server_process.h"
#include "testing/build_paths.h"
#include "testing/npm_oracle.h"
#include "testing/process.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// (event name, data) pairs of an Anthropic stream.
std::vector<std::pair<std::string, json>> events_of(uint16_t port, json body) {
  body["stream"] = true;
  const HttpResponse r = http_post(port, "/v1/messages", body);
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<std::pair<std::string, json>> events;
  size_t pos = 0;
  while (pos < r.body.size()) {
    const size_t end = r.body.find("\n\n", pos);
    const std::string ev = r.body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? r.body.size() : end + 2;
    const size_t nl = ev.find('\n');
    if (!ev.starts_with("event: ") || nl == std::string::npos) continue;
    EXPECT_TRUE(ev.substr(nl + 1).starts_with("data: ")) << ev;
    events.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
  }
  return events;
}

// A thinking model in `dir`: the real Qwen3.5 template (hermes tool calls,
// <think> reasoning), random weights, as reasoning_test.cpp. "" if the template is missing.
std::string write_thinker(const fs::path& dir) {
  const std::string tmpl = read_text(fs::path(PAGODA_SOURCE_DIR) / "tests/chat/templates/Qwen--Qwen3.5-4B.jinja");
  if (tmpl.empty()) return "";
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  SyntheticModelSpec spec;
  spec.arch = "llama";
  spec.tokenizer = "gpt2";
  spec.n_vocab = 400;
  spec.n_ctx = 2048;
  spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"};
  spec.eos_token = "<|im_end|>";
  spec.chat_template = tmpl;
  synthetic_model(spec).write(model);
  return model;
}

class ServerMessages : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-body-size", "65536"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static uint16_t port() { return server_->port(); }
  static json post(const std::string& target, const json& body, int want_status = 200) {
    const HttpResponse r = http_post(port(), target, body);
    EXPECT_EQ(r.status, want_status) << r.body;
    return r.json();
  }
  static std::vector<std::pair<std::string, json>> stream(json body) { return events_of(port(), std::move(body)); }
  static ServerProcess* server_;
};
ServerProcess* ServerMessages::server_ = nullptr;

const json kUser = {{{"role", "user"}, {"content", "Once upon a time"}}};

const json kWeatherTool = {{"name", "get_weather"},
                           {"description", "The weather in a city"},
                           {"input_schema",
                            {{"type", "object"},
                             {"properties", {{"city", {{"type", "string"}, {"enum", {"Oslo", "Rome"}}}}}},
                             {"required", {"city"}},
                             {"additionalProperties", false}}}};

// Small enough for stories260K's context to leave room for the call.
const json kTinyTool = {{"name", "w"},
                        {"input_schema",
                         {{"type", "object"},
                          {"properties", {{"c", {{"type", "string"}, {"enum", {"O", "R"}}}}}},
                          {"required", {"c"}},
                          {"additionalProperties", false}}}};

// An Anthropic error: its status, shape, type, and the field named in the message.
void expect_error(const HttpResponse& r, int status, const std::string& type, const std::string& field) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["type"], "error") << r.body;
  EXPECT_EQ(j["error"]["type"], type) << r.body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(field), std::string::npos) << r.body;
}

TEST_F(ServerMessages, TextMessage) {
  const json m = post("/v1/messages", {{"model", "stories260K"},
                                       {"max_tokens", 16},
                                       {"temperature", 0},
                                       {"metadata", {{"user_id", "u"}}},
                                       {"messages", kUser}});
  EXPECT_TRUE(m["id"].get<std::string>().starts_with("msg_")) << m;
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "stories260K");
  ASSERT_EQ(m["content"].size(), 1u) << m;
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_FALSE(m["content"][0]["text"].get<std::string>().empty());
  EXPECT_TRUE(m["stop_reason"] == "max_tokens" || m["stop_reason"] == "end_turn") << m;
  EXPECT_EQ(m["stop_sequence"], nullptr);
  EXPECT_LE(m["usage"]["output_tokens"].get<int>(), 16);
  const json count = post("/v1/messages/count_tokens", {{"model", "stories260K"}, {"messages", kUser}});
  EXPECT_EQ(m["usage"]["input_tokens"], count["input_tokens"]);
}

TEST_F(ServerMessages, StopSequences) {
  const json m = post("/v1/messages",
                      {{"max_tokens", 64}, {"temperature", 0}, {"stop_sequences", {"e", "a"}}, {"messages", kUser}});
  EXPECT_EQ(m["stop_reason"], "stop_sequence") << m;
  EXPECT_TRUE(m["stop_sequence"] == "e" || m["stop_sequence"] == "a") << m;
}

// Each field lands where the chat body would put it: the same prompt, counted.
TEST_F(ServerMessages, FieldsMapOntoTheChatPrompt) {
  const json anthropic = {
      {"system", {{{"type", "text"}, {"text", "Be "}}, {{"type", "text"}, {"text", "brief."}}}},
      {"tools", {kWeatherTool}},
      {"messages",
       {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Weather in Oslo?"}}}}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "text"}, {"text", "Checking."}},
           {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Oslo"}}}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "Sunny"}},
           {{"type", "text"}, {"text", "Thanks"}}}}}}}};
  const json openai = {{"tools",
                        {{{"type", "function"},
                          {"function",
                           {{"name", "get_weather"},
                            {"description", "The weather in a city"},
                            {"parameters", kWeatherTool["input_schema"]}}}}}},
                       {"messages",
                        {{{"role", "system"}, {"content", "Be brief."}},
                         {{"role", "user"}, {"content", "Weather in Oslo?"}},
                         {{"role", "assistant"},
                          {"content", "Checking."},
                          {"tool_calls",
                           {{{"id", "toolu_1"},
                             {"type", "function"},
                             {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Oslo"})"}}}}}}},
                         {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "Sunny"}},
                         {{"role", "user"}, {"content", "Thanks"}}}}};
  const json count = post("/v1/messages/count_tokens", anthropic);
  const json tokens = post("/tokenize", openai);
  EXPECT_EQ(count["input_tokens"], tokens["count"]) << count << tokens;
  // A system string counts as its text blocks do.
  json as_string = anthropic;
  as_string["system"] = "Be brief.";
  EXPECT_EQ(post("/v1/messages/count_tokens", as_string)["input_tokens"], count["input_tokens"]);
  json without = anthropic;
  without.erase("system");
  EXPECT_LT(post("/v1/messages/count_tokens", without)["input_tokens"], count["input_tokens"]);
  // And /v1/messages generates from that prompt (without the tools, which fill stories260K's 512-token context).
  json gen = anthropic;
  gen.erase("tools");
  const json gen_count = post("/v1/messages/count_tokens", gen);
  gen["max_tokens"] = 4;
  EXPECT_EQ(post("/v1/messages", gen)["usage"]["input_tokens"], gen_count["input_tokens"]);
}

// Consecutive turns of one role are one turn; a last assistant turn is continued (a prefill).
TEST_F(ServerMessages, MergedTurnsAndPrefill) {
  const json split = {{"messages",
                       {{{"role", "user"}, {"content", "Once upon"}},
                        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a time"}}}}}}}};
  const json one = {{"messages", {{{"role", "user"}, {"content", "Once upon\n\na time"}}}}};
  EXPECT_EQ(post("/v1/messages/count_tokens", split)["input_tokens"], post("/tokenize", one)["count"]);

  const json prefill = {{"messages", {kUser[0], {{"role", "assistant"}, {"content", "there was a"}}}}};
  json chat = prefill;
  chat["continue_final_message"] = true;
  chat["add_generation_prompt"] = false;
  EXPECT_EQ(post("/v1/messages/count_tokens", prefill)["input_tokens"], post("/tokenize", chat)["count"]);
  json gen = prefill;
  gen["max_tokens"] = 8;
  gen["temperature"] = 0;
  const json m = post("/v1/messages", gen);
  chat["max_tokens"] = 8;
  chat["temperature"] = 0;
  const json c = post("/v1/chat/completions", chat);
  EXPECT_EQ(m["content"][0]["text"], c["choices"][0]["message"]["content"]) << m << c;
}

TEST_F(ServerMessages, ToolChoiceNoneWritesText) {
  const json none =
      post("/v1/messages",
           {{"max_tokens", 8}, {"tools", {kWeatherTool}}, {"tool_choice", {{"type", "none"}}}, {"messages", kUser}});
  for (const json& b : none["content"]) EXPECT_EQ(b["type"], "text") << none;
}

TEST_F(ServerMessages, StreamEventSequence) {
  const json body = {{"max_tokens", 24}, {"temperature", 0}, {"messages", kUser}};
  const json whole = post("/v1/messages", body);
  const auto events = stream(body);
  ASSERT_GE(events.size(), 5u);
  std::vector<std::string> names;
  std::string text;
  for (const auto& [name, data] : events) {
    EXPECT_EQ(data["type"], name);
    if (names.empty() || names.back() != name) names.push_back(name);
    if (name == "content_block_delta") {
      EXPECT_EQ(data["index"], 0);
      EXPECT_EQ(data["delta"]["type"], "text_delta");
      text += data["delta"]["text"].get<std::string>();
    }
  }
  const std::vector<std::string> want = {"message_start",      "content_block_start", "content_block_delta",
                                         "content_block_stop", "message_delta",       "message_stop"};
  EXPECT_EQ(names, want);
  const json& start = events.front().second["message"];
  EXPECT_TRUE(start["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(start["content"], json::array());
  EXPECT_EQ(start["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
  EXPECT_EQ(text, whole["content"][0]["text"]);
  const json& delta = events[events.size() - 2].second;
  EXPECT_EQ(delta["delta"]["stop_reason"], whole["stop_reason"]);
  EXPECT_EQ(delta["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
}

TEST_F(ServerMessages, ErrorsInAnthropicsShape) {
  const auto send = [](const json& body, const std::string& target = "/v1/messages") {
    return http_post(port(), target, body);
  };
  expect_error(send({{"messages", kUser}}), 400, "invalid_request_error", "max_tokens");
  expect_error(send({{"max_tokens", 0}, {"messages", kUser}}), 400, "invalid_request_error", "max_tokens");
  expect_error(send({{"max_tokens", 8}}), 400, "invalid_request_error", "messages");
  expect_error(send({{"max_tokens", 8}, {"messages", {{{"role", "system"}, {"content", "x"}}}}}), 400,
               "invalid_request_error", "messages.0.role");
  expect_error(
      send({{"max_tokens", 8}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image"}, {"source", {}}}}}}}}}),
      400, "invalid_request_error", "messages.0.content.0");
  expect_error(send({{"max_tokens", 8}, {"tools", {{{"name", "x"}}}}, {"messages", kUser}}), 400,
               "invalid_request_error", "tools.0.input_schema");
  expect_error(send({{"max_tokens", 8},
                     {"tools", {kWeatherTool}},
                     {"tool_choice", {{"type", "tool"}, {"name", "y"}}},
                     {"messages", kUser}}),
               400, "invalid_request_error", "tool_choice");
  expect_error(send({{"max_tokens", 8}, {"thinking", {{"type", "sometimes"}}}, {"messages", kUser}}), 400,
               "invalid_request_error", "thinking");
  expect_error(send({{"model", "claude-nope"}, {"max_tokens", 8}, {"messages", kUser}}), 404, "not_found_error",
               "claude-nope");
  expect_error(send({{"max_tokens", 1 << 20}, {"messages", kUser}}), 400, "invalid_request_error", "max_tokens");
  expect_error(http_post_raw(port(), "/v1/messages", "{nope"), 400, "invalid_request_error", "JSON");
  expect_error(send({{"messages", "x"}}, "/v1/messages/count_tokens"), 400, "invalid_request_error", "messages");
  // The chat parser's limits hold, named as Anthropic names the field.
  expect_error(send({{"max_tokens", 8}, {"stop_sequences", std::vector<std::string>(17, "x")}, {"messages", kUser}}),
               400, "invalid_request_error", "stop_sequences");
  expect_error(send({{"max_tokens", 8}, {"stop_sequences", {""}}, {"messages", kUser}}), 400, "invalid_request_error",
               "stop_sequences");
  expect_error(send({{"max_tokens", 8}, {"temperature", -1}, {"messages", kUser}}), 400, "invalid_request_error",
               "temperature");
  expect_error(send({{"max_tokens", 8}, {"mcp_servers", {{{"url", "x"}}}}, {"messages", kUser}}), 400,
               "invalid_request_error", "mcp_servers");
  // A body over --max-body-size, refused before it is routed, still gets Anthropic's shape.
  expect_error(send({{"max_tokens", 8}, {"system", std::string(70000, 'x')}, {"messages", kUser}}), 413,
               "request_too_large", "");
  // Chat keeps OpenAI's shape.
  const HttpResponse chat = http_post(port(), "/v1/chat/completions", {{"messages", "x"}});
  EXPECT_TRUE(json::parse(chat.body)["error"].contains("param")) << chat.body;
}

// A thinking model (the real Qwen3.5 template, random weights, as reasoning_test.cpp):
// forced tool use in its hermes format, and reasoning as thinking blocks.
TEST(ServerMessagesThinker, ForcedToolUseAndThinking) {
  const fs::path dir = fs::temp_directory_path() / ("pagoda-messages-" + std::to_string(::getpid()));
  const std::string model = write_thinker(dir);
  ASSERT_FALSE(model.empty());
  ServerProcess server({"-m", model});
  const auto post = [&](const json& body) {
    const HttpResponse r = http_post(server.port(), "/v1/messages", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  const auto stream = [&](json body) { return events_of(server.port(), std::move(body)); };
  const json off = {{"type", "disabled"}};

  for (const json& choice :
       {json{{"type", "tool"}, {"name", "w"}}, json{{"type", "any"}, {"disable_parallel_tool_use", true}}}) {
    SCOPED_TRACE(choice.dump());
    const json body = {
        {"max_tokens", 256}, {"tools", {kTinyTool}}, {"tool_choice", choice}, {"thinking", off}, {"messages", kUser}};
    const json m = post(body);
    ASSERT_FALSE(m["content"].empty()) << m;
    const json& use = m["content"].back();
    EXPECT_EQ(use["type"], "tool_use") << m;
    EXPECT_TRUE(use["id"].get<std::string>().starts_with("toolu_")) << m;
    EXPECT_EQ(use["name"], "w");
    EXPECT_TRUE(use["input"]["c"] == "O" || use["input"]["c"] == "R") << m;
    EXPECT_EQ(m["stop_reason"], "tool_use") << m;

    // Streamed: the block's head, then input_json_delta pieces that join into the input.
    std::string partial;
    json start;
    for (const auto& [name, data] : stream(body)) {
      if (name == "content_block_start" && data["content_block"]["type"] == "tool_use") start = data;
      if (name == "content_block_delta" && data["delta"]["type"] == "input_json_delta")
        partial += data["delta"]["partial_json"].get<std::string>();
      if (name == "message_delta") {
        EXPECT_EQ(data["delta"]["stop_reason"], "tool_use") << data;
      }
    }
    EXPECT_EQ(start["content_block"]["name"], "w") << start;
    EXPECT_EQ(start["content_block"]["input"], json::object());
    EXPECT_TRUE(json::parse(partial)["c"].is_string()) << partial;
  }

  // Thinking enabled: the reasoning comes first as a thinking block, streamed as thinking_delta.
  const json think = {
      {"max_tokens", 64}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}, {"messages", kUser}};
  const json thought = post(think);
  ASSERT_FALSE(thought["content"].empty()) << thought;
  EXPECT_EQ(thought["content"][0]["type"], "thinking") << thought;
  EXPECT_FALSE(thought["content"][0]["thinking"].get<std::string>().empty());
  EXPECT_EQ(thought["content"][0]["signature"], "");
  std::string streamed;
  for (const auto& [name, data] : stream(think)) {
    if (name == "content_block_start" && data["index"] == 0) {
      EXPECT_EQ(data["content_block"]["type"], "thinking");
    }
    if (name == "content_block_delta" && data["delta"]["type"] == "thinking_delta")
      streamed += data["delta"]["thinking"].get<std::string>();
  }
  EXPECT_FALSE(streamed.empty());
  // An assistant turn's thinking block reaches the template (Qwen3.5 shows the reasoning of the
  // turn after the last question, here a prefill).
  const auto count = [&](const json& body) {
    return http_post(server.port(), "/v1/messages/count_tokens", body).json()["input_tokens"].get<int>();
  };
  const json answered = {
      kUser[0],
      {{"role", "assistant"},
       {"content",
        {{{"type", "thinking"}, {"thinking", "Be kind."}, {"signature", ""}}, {{"type", "text"}, {"text", "Hello"}}}}}};
  EXPECT_GT(count({{"messages", {answered[0], answered[1]}}}),
            count({{"messages", {answered[0], {{"role", "assistant"}, {"content", "Hello"}}}}}));
  // Without `thinking` the reasoning is dropped, as Anthropic's API omits it.
  json plain = think;
  plain.erase("thinking");
  const json reply = post(plain);  // kept: a range-for over a temporary's member would read freed memory
  for (const json& b : reply["content"]) EXPECT_NE(b["type"], "thinking");
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

// An engine fault: a 500 api_error before any output; after output, the stream's last event is an error.
TEST(ServerMessagesFaults, ErrorStatusOrErrorEvent) {
  {
    ServerProcess s({"--inject-faults", "at_step=1"});
    expect_error(http_post(s.port(), "/v1/messages", {{"max_tokens", 8}, {"messages", kUser}}), 500, "api_error", "");
    EXPECT_EQ(s.stop(), 0);
  }
  ServerProcess s({"--inject-faults", "at_step=4"});
  const auto events = events_of(s.port(), {{"max_tokens", 20}, {"messages", kUser}});
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().first, "message_start");
  const auto& [name, err] = events.back();
  EXPECT_EQ(name, "error");
  EXPECT_EQ(err["type"], "error");
  EXPECT_EQ(err["error"]["type"], "api_error") << err;
  int deltas = 0;
  for (const auto& e : events) deltas += e.first == "content_block_delta";
  EXPECT_EQ(deltas, 3);
  EXPECT_EQ(s.stop(), 0);
}

// The official @anthropic-ai/sdk, unmodified, against real servers
// (openai_client/anthropic.mjs): create, stream, count_tokens and typed
// errors on stories260K; a tool_use round trip, streamed and not, on a hermes model.
TEST(ServerMessagesSdk, AnthropicClient) {
  const fs::path client = fs::path(PAGODA_SOURCE_DIR) / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(client.string(), "@anthropic-ai/sdk");
  const auto run = [&](uint16_t port, const std::string& model, const std::string& mode) {
    const auto p = run_process({"/usr/bin/env", "node", (client / "anthropic.mjs").string(),
                                "http://127.0.0.1:" + std::to_string(port), model, "sdk-key", mode});
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_NE(p.out.find("anthropic " + mode + " checks passed"), std::string::npos) << p.out << p.err;
  };
  {
    ServerProcess stories({"--api-key", "sdk-key"});
    run(stories.port(), "stories260K", "text");
    EXPECT_EQ(stories.stop(), 0);
  }
  const fs::path dir = fs::temp_directory_path() / ("pagoda-messages-sdk-" + std::to_string(::getpid()));
  const std::string model = write_thinker(dir);
  ASSERT_FALSE(model.empty());
  ServerProcess thinker({"-m", model, "--api-key", "sdk-key"});
  run(thinker.port(), "model", "tools");
  EXPECT_EQ(thinker.stop(), 0);
  fs::remove_all(dir);
}

TEST(ServerMessagesAuth, XApiKeyOrBearer) {
  ServerProcess server({"--api-key", "sekrit"});
  const json body = {{"max_tokens", 4}, {"messages", kUser}};
  EXPECT_EQ(http_post(server.port(), "/v1/messages", body, {{"x-api-key", "sekrit"}}).status, 200);
  EXPECT_EQ(http_post(server.port(), "/v1/messages", body, {{"Authorization", "Bearer sekrit"}}).status, 200);
  expect_error(http_post(server.port(), "/v1/messages", body, {{"x-api-key", "wrong"}}), 401, "authentication_error",
               "API key");
  expect_error(http_post(server.port(), "/v1/messages/count_tokens", body), 401, "authentication_error", "API key");
  EXPECT_EQ(http_post(server.port(), "/v1/chat/completions", {{"max_tokens", 2}, {"messages", kUser}},
                      {{"x-api-key", "sekrit"}})
                .status,
            200);
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
