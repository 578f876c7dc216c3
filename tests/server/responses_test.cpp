// OpenAI's Responses API on a real server (stories260K): the response object,
// the prompt it renders (checked against /tokenize on the equivalent chat
// body), the stream's events, the store (previous_response_id, GET, DELETE,
// store: false), concurrent requests sharing the store, errors in OpenAI's
// shape naming the field, response.failed on an engine fault, the official
// `openai` npm client (openai_client/responses.mjs) and the Vercel AI SDK
// (openai_client/ai_sdk.mjs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
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

// (event name, data) pairs of a Responses stream.
std::vector<std::pair<std::string, json>> responses_events(uint16_t port, json body) {
  body["stream"] = true;
  const HttpResponse r = http_post(port, "/v1/responses", body);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  std::vector<std::pair<std::string, json>> events;
  size_t pos = 0;
  while (pos < r.body.size()) {
    const size_t end = r.body.find("\n\n", pos);
    const std::string ev = r.body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? r.body.size() : end + 2;
    const size_t nl = ev.find('\n');
    if (!ev.starts_with("event: ") || nl == std::string::npos) continue;
    events.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
  }
  return events;
}

// An OpenAI error: status, shape, and the field named in param.
void expect_responses_error(const HttpResponse& r, int status, const std::string& param) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body);
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["param"], param.empty() ? json(nullptr) : json(param)) << r.body;
}

class ServerResponses : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-body-size", "65536"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static uint16_t port() { return server_->port(); }
  static json create(const json& body, int want_status = 200) {
    const HttpResponse r = http_post(port(), "/v1/responses", body);
    EXPECT_EQ(r.status, want_status) << r.body;
    return r.json();
  }
  static ServerProcess* server_;
};
ServerProcess* ServerResponses::server_ = nullptr;

TEST_F(ServerResponses, ResponseObject) {
  const json r = create({{"model", "stories260K"},
                         {"input", "Once upon a time"},
                         {"max_output_tokens", 16},
                         {"temperature", 0},
                         {"metadata", {{"k", "v"}}}});
  EXPECT_TRUE(r["id"].get<std::string>().starts_with("resp_")) << r;
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_GT(r["created_at"].get<int64_t>(), 0);
  EXPECT_TRUE(r["status"] == "completed" || r["status"] == "incomplete") << r;
  ASSERT_EQ(r["output"].size(), 1u) << r;
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["role"], "assistant");
  EXPECT_FALSE(r["output"][0]["content"][0]["text"].get<std::string>().empty());
  EXPECT_LE(r["usage"]["output_tokens"].get<int>(), 16);
  EXPECT_EQ(r["max_output_tokens"], 16);
  EXPECT_EQ(r["temperature"], 0);
  EXPECT_EQ(r["metadata"]["k"], "v");
  EXPECT_EQ(r["store"], true);
  EXPECT_EQ(r["tools"], json::array());
  // Cut by max_output_tokens: incomplete, with the reason.
  const json cut = create({{"input", "Once upon a time"}, {"max_output_tokens", 1}});
  EXPECT_EQ(cut["status"], "incomplete") << cut;
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
}

// The same prompt as the chat body the table in responses_request.h says.
TEST_F(ServerResponses, InputRendersAsTheChatBody) {
  const json items = {
      {{"role", "developer"}, {"content", "Be brief."}},
      {{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Once upon"}}}}},
      {{"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "a time"}}}}},
      {{"role", "user"}, {"content", "there was"}}};
  const json r = create({{"instructions", "Tell a story."}, {"input", items}, {"max_output_tokens", 2}});
  const json chat = {{"messages",
                      {{{"role", "system"}, {"content", "Tell a story."}},
                       {{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"}, {"content", "Once upon"}},
                       {{"role", "assistant"}, {"content", "a time"}},
                       {{"role", "user"}, {"content", "there was"}}}}};
  const HttpResponse t = http_post(port(), "/tokenize", chat);
  EXPECT_EQ(r["usage"]["input_tokens"], t.json()["count"]) << r << t.body;
}

TEST_F(ServerResponses, StreamEvents) {
  const json body = {{"input", "Once upon a time"}, {"max_output_tokens", 24}, {"temperature", 0}};
  const json whole = create(body);
  const auto events = responses_events(port(), body);
  ASSERT_GE(events.size(), 8u);
  std::vector<std::string> names;
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& [name, data] = events[i];
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], i);
    if (names.empty() || names.back() != name) names.push_back(name);
    if (name == "response.output_text.delta") text += data["delta"].get<std::string>();
  }
  const std::string last = whole["status"] == "completed" ? "response.completed" : "response.incomplete";
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         last};
  EXPECT_EQ(names, want);
  EXPECT_EQ(text, whole["output"][0]["content"][0]["text"]);
  const json& done = events.back().second["response"];
  EXPECT_EQ(done["usage"]["input_tokens"], whole["usage"]["input_tokens"]);  // cached_tokens: the prefix cache's
  EXPECT_EQ(done["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
  EXPECT_EQ(done["output"][0]["content"], whole["output"][0]["content"]);
  // A streamed response is stored too.
  EXPECT_EQ(http_get(port(), "/v1/responses/" + done["id"].get<std::string>()).json()["output"], done["output"]);
}

TEST_F(ServerResponses, StoreRetrieveDeleteAndPrevious) {
  const json first =
      create({{"input", "Once upon a time"}, {"instructions", "Tell a story."}, {"max_output_tokens", 8}});
  const std::string id = first["id"];
  const HttpResponse got = http_get(port(), "/v1/responses/" + id);
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.json(), first);
  // previous_response_id: the stored input and output come first (the instructions do not carry over).
  const json next = create({{"previous_response_id", id}, {"input", "And then"}, {"max_output_tokens", 2}});
  const json explicit_input = {{{"role", "user"}, {"content", "Once upon a time"}},
                               {{"role", "assistant"}, {"content", first["output"][0]["content"][0]["text"]}},
                               {{"role", "user"}, {"content", "And then"}}};
  const json same = create({{"input", explicit_input}, {"max_output_tokens", 2}, {"store", false}});
  EXPECT_EQ(next["usage"]["input_tokens"], same["usage"]["input_tokens"]);
  EXPECT_EQ(next["previous_response_id"], id);
  // Its input items, newest first by default, with ids; paged with limit and after.
  const json items = http_get(port(), "/v1/responses/" + id + "/input_items?order=asc").json();
  EXPECT_EQ(items["object"], "list");
  ASSERT_EQ(items["data"].size(), 1u) << items;
  EXPECT_EQ(items["data"][0]["type"], "message");
  EXPECT_EQ(items["data"][0]["role"], "user");
  EXPECT_TRUE(items["data"][0]["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(items["data"][0]["content"], json::parse(R"([{"type":"input_text","text":"Once upon a time"}])"));
  EXPECT_EQ(items["has_more"], false);
  const std::string two =
      create({{"input", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}},
              {"max_output_tokens", 1}})["id"];
  const json page = http_get(port(), "/v1/responses/" + two + "/input_items?limit=1").json();
  ASSERT_EQ(page["data"].size(), 1u) << page;
  EXPECT_EQ(page["data"][0]["content"][0]["text"], "b");
  EXPECT_EQ(page["has_more"], true);
  const json rest =
      http_get(port(), "/v1/responses/" + two + "/input_items?limit=1&after=" + page["last_id"].get<std::string>())
          .json();
  EXPECT_EQ(rest["data"][0]["content"][0]["text"], "a");
  EXPECT_EQ(rest["has_more"], false);
  expect_responses_error(http_get(port(), "/v1/responses/" + two + "/input_items?limit=0"), 400, "limit");
  // DELETE, then both are 404s in OpenAI's shape.
  HttpConnection c(port());
  const HttpResponse del = c.request("DELETE", "/v1/responses/" + id);
  EXPECT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json(), json({{"id", id}, {"object", "response"}, {"deleted", true}}));
  expect_responses_error(c.request("DELETE", "/v1/responses/" + id), 404, "response_id");
  expect_responses_error(http_get(port(), "/v1/responses/" + id), 404, "response_id");
  expect_responses_error(http_get(port(), "/v1/responses/" + id + "/input_items"), 404, "response_id");
  expect_responses_error(http_get(port(), "/v1/responses/resp_nope/other"), 404, "response_id");
  expect_responses_error(http_post(port(), "/v1/responses", {{"previous_response_id", id}, {"input", "x"}}), 400,
                         "previous_response_id");
  // store: false keeps nothing.
  const json unstored = create({{"input", "x"}, {"max_output_tokens", 1}, {"store", false}});
  EXPECT_EQ(http_get(port(), "/v1/responses/" + unstored["id"].get<std::string>()).status, 404);
}

// Connections on several threads store and read at once.
TEST_F(ServerResponses, ConcurrentStore) {
  std::vector<std::future<std::string>> ids;
  for (int i = 0; i < 8; ++i)
    ids.push_back(std::async(std::launch::async, [i] {
      const json r =
          http_post(port(), "/v1/responses", {{"input", "Tale " + std::to_string(i)}, {"max_output_tokens", 2}}).json();
      const std::string id = r["id"];
      EXPECT_EQ(http_get(port(), "/v1/responses/" + id).status, 200);
      EXPECT_EQ(
          http_post(port(), "/v1/responses", {{"previous_response_id", id}, {"input", "x"}, {"max_output_tokens", 1}})
              .status,
          200);
      return id;
    }));
  for (auto& f : ids) EXPECT_TRUE(f.get().starts_with("resp_"));
}

TEST_F(ServerResponses, ErrorsNameTheField) {
  const auto send = [](const json& body) { return http_post(port(), "/v1/responses", body); };
  expect_responses_error(send(json::object()), 400, "input");
  expect_responses_error(send({{"input", 3}}), 400, "input");
  expect_responses_error(send({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}}}}}}}}), 400,
                         "input.0.content.0.type");
  expect_responses_error(send({{"input", "x"}, {"tools", {{{"type", "file_search"}}}}}), 400, "tools.0.type");
  expect_responses_error(send({{"input", "x"}, {"max_output_tokens", 1 << 20}}), 400, "max_output_tokens");
  expect_responses_error(send({{"input", "x"}, {"temperature", -1}}), 400, "temperature");
  expect_responses_error(send({{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}), 400, "text.format.type");
  expect_responses_error(send({{"input", "x"}, {"reasoning", {{"effort", "extreme"}}}}), 400, "reasoning.effort");
  expect_responses_error(send({{"model", "gpt-nope"}, {"input", "x"}}), 404, "model");
  expect_responses_error(http_post_raw(port(), "/v1/responses", "{nope"), 400, "");
  // Over --max-body-size: 413 in OpenAI's shape.
  const HttpResponse big = send({{"input", std::string(70000, 'x')}});
  EXPECT_EQ(big.status, 413);
  EXPECT_TRUE(json::parse(big.body).contains("error")) << big.body;
  // Unknown fields are named in the header, not refused.
  const HttpResponse odd = send({{"input", "x"}, {"max_output_tokens", 1}, {"frobnicate", 1}});
  EXPECT_EQ(odd.status, 200);
  EXPECT_EQ(odd.header("x-pagoda-ignored-fields"), "frobnicate");
}

// An engine fault: a 500 before any output; after output, response.failed ends the stream.
TEST(ServerResponsesFaults, ErrorStatusOrFailedEvent) {
  {
    ServerProcess s({"--inject-faults", "at_step=1"});
    const HttpResponse r = http_post(s.port(), "/v1/responses", {{"input", "x"}, {"max_output_tokens", 8}});
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_EQ(s.stop(), 0);
  }
  ServerProcess s({"--inject-faults", "at_step=4"});
  const auto events = responses_events(s.port(), {{"input", "Once upon a time"}, {"max_output_tokens", 20}});
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().first, "response.created");
  const auto& [name, data] = events.back();
  EXPECT_EQ(name, "response.failed");
  EXPECT_EQ(data["response"]["status"], "failed");
  EXPECT_FALSE(data["response"]["error"]["message"].get<std::string>().empty());
  EXPECT_EQ(s.stop(), 0);
}

// A thinking model in `dir` (the real Qwen3.5 template: <think> reasoning,
// hermes calls; random weights), as messages_test.cpp. "" if the template is missing.
std::string write_responses_thinker(const std::filesystem::path& dir) {
  std::ifstream in(std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/chat/templates/Qwen--Qwen3.5-4B.jinja");
  std::stringstream tmpl;
  tmpl << in.rdbuf();
  if (tmpl.str().empty()) return "";
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  SyntheticModelSpec spec;
  spec.arch = "llama";
  spec.tokenizer = "gpt2";
  spec.n_vocab = 400;
  spec.n_ctx = 2048;
  spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"};
  spec.eos_token = "<|im_end|>";
  spec.chat_template = tmpl.str();
  synthetic_model(spec).write(model);
  return model;
}

// Reasoning comes out as a reasoning item (streamed as reasoning_text), goes
// back in as an assistant's reasoning; a forced call on a hermes model with
// thinking off (reasoning.effort "none").
TEST(ServerResponsesThinker, ReasoningItemsAndForcedCall) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pagoda-responses-" + std::to_string(::getpid()));
  const std::string model = write_responses_thinker(dir);
  ASSERT_FALSE(model.empty());
  ServerProcess server({"-m", model});
  const auto create = [&](const json& body) {
    const HttpResponse r = http_post(server.port(), "/v1/responses", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  const json think = {{"input", "Once upon a time"}, {"max_output_tokens", 64}};
  const json r = create(think);
  ASSERT_FALSE(r["output"].empty()) << r;
  EXPECT_EQ(r["output"][0]["type"], "reasoning") << r;
  EXPECT_TRUE(r["output"][0]["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(r["output"][0]["content"][0]["type"], "reasoning_text");
  EXPECT_FALSE(r["output"][0]["content"][0]["text"].get<std::string>().empty());
  std::string streamed;
  bool part_added = false;
  for (const auto& [name, data] : responses_events(server.port(), think)) {
    if (name == "response.content_part.added" && data["output_index"] == 0)
      part_added = data["part"]["type"] == "reasoning_text";
    if (name == "response.reasoning_text.delta") streamed += data["delta"].get<std::string>();
  }
  EXPECT_TRUE(part_added);
  EXPECT_FALSE(streamed.empty());
  // A reasoning item sent back reaches the template (Qwen3.5 shows the reasoning after the last question).
  const json user = {{"role", "user"}, {"content", "Once upon a time"}};
  const json answer = {{"role", "assistant"}, {"content", "Hello"}};
  const json reasoning = {{"type", "reasoning"},
                          {"summary", json::array()},
                          {"content", {{{"type", "reasoning_text"}, {"text", "Be kind."}}}}};
  const auto prompt = [&](const json& input) {
    return create({{"input", input}, {"max_output_tokens", 1}, {"store", false}})["usage"]["input_tokens"].get<int>();
  };
  EXPECT_GT(prompt({user, reasoning, answer}), prompt({user, answer}));
  // A forced call: a function_call item with the parsed arguments.
  const json tool = {{"type", "function"},
                     {"name", "w"},
                     {"parameters",
                      {{"type", "object"},
                       {"properties", {{"c", {{"type", "string"}, {"enum", {"O", "R"}}}}}},
                       {"required", {"c"}},
                       {"additionalProperties", false}}}};
  const json called = create({{"input", "Weather?"},
                              {"tools", {tool}},
                              {"tool_choice", {{"type", "function"}, {"name", "w"}}},
                              {"reasoning", {{"effort", "none"}}},
                              {"max_output_tokens", 256}});
  ASSERT_FALSE(called["output"].empty()) << called;
  const json& call = called["output"].back();
  EXPECT_EQ(call["type"], "function_call") << called;
  EXPECT_EQ(call["name"], "w");
  EXPECT_TRUE(json::parse(call["arguments"].get<std::string>())["c"].is_string()) << call;
  EXPECT_EQ(server.stop(), 0);
  std::filesystem::remove_all(dir);
}

// The official `openai` npm client, unmodified: create, stream, a function
// call round trip, json_schema output, previous_response_id, retrieve and delete.
TEST(ServerResponsesSdk, OpenAiClient) {
  const std::filesystem::path src = PAGODA_SOURCE_DIR;
  const std::filesystem::path dir = src / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "openai");
  ServerProcess s({"--chat-template", (src / "tests/server/templates/tiny_tools.jinja").string()});
  const auto p = run_process({"/usr/bin/env", "node", (dir / "responses.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(s.port()) + "/v1", "stories260K"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("responses checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

// The Vercel AI SDK (`ai` with `@ai-sdk/openai`, whose openai(model) speaks
// the Responses API): generateText, streamText, generateObject and a forced
// tool call, with a template whose <tool_call> marker picks the hermes parser.
TEST(ServerResponsesSdk, VercelAiSdk) {
  const std::filesystem::path src = PAGODA_SOURCE_DIR;
  const std::filesystem::path dir = src / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "@ai-sdk/openai");
  ServerProcess s({"--chat-template", (src / "tests/server/templates/tiny_tools.jinja").string()});
  const auto p = run_process({"/usr/bin/env", "node", (dir / "ai_sdk.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(s.port()) + "/v1", "stories260K"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("ai sdk checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
