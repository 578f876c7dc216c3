// The OpenAI endpoints of the real `pagoda serve` over loopback: shapes of
// responses and stream chunks, sampling fields, and greedy output checked
// against llama.cpp's reference for stories260K.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "testing/build_paths.h"
#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/shared_data.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

class ServerApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-body-size", "65536", "--io-threads", "2"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->stderr_text();
    delete server_;
  }
  static uint16_t port() { return server_->port(); }
  static json post(const std::string& target, const json& body, int want_status = 200) {
    const HttpResponse r = http_post(port(), target, body);
    EXPECT_EQ(r.status, want_status) << r.body;
    return r.json();
  }
  // The stream's JSON chunks; checks the framing and the final [DONE].
  static std::vector<json> stream(const std::string& target, json body) {
    body["stream"] = true;
    const HttpResponse r = http_post(port(), target, body);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type").rfind("text/event-stream", 0), 0u);
    const auto payloads = sse_payloads(r.body);
    EXPECT_FALSE(payloads.empty());
    EXPECT_EQ(payloads.back(), "[DONE]");
    std::vector<json> chunks;
    for (size_t i = 0; i + 1 < payloads.size(); ++i) chunks.push_back(json::parse(payloads[i]));
    return chunks;
  }
  static json reference() {
    return json::parse(read_file(shared_path("testdata/reference/stories260K_greedy.json")))["results"][0];
  }
  static ServerProcess* server_;
};
ServerProcess* ServerApi::server_ = nullptr;

TEST_F(ServerApi, HealthAndModels) {
  const HttpResponse h = http_get(port(), "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  const json models = http_get(port(), "/v1/models").json();
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(http_get(port(), "/v1/models/stories260K").json()["id"], "stories260K");
  const HttpResponse missing = http_get(port(), "/v1/models/gpt-4");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "model_not_found");
}

TEST_F(ServerApi, GreedyCompletionMatchesReference) {
  const json ref = reference();
  // `model` names the served model; the response says its name.
  const json r = post("/v1/completions",
                      {{"model", "stories260K"}, {"prompt", ref["prompt"]}, {"max_tokens", 64}, {"temperature", 0}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_EQ(r["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(r["choices"].size(), 1u);
  EXPECT_EQ(r["choices"][0]["text"], ref["output_text"]);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(r["usage"]["prompt_tokens"], ref["prompt_token_ids"].size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 64);
  EXPECT_EQ(r["usage"]["total_tokens"], 64 + ref["prompt_token_ids"].size());

  // The same prompt as token ids gives the same text.
  const json ids =
      post("/v1/completions", {{"prompt", ref["prompt_token_ids"]}, {"max_tokens", 64}, {"temperature", 0}});
  EXPECT_EQ(ids["choices"][0]["text"], ref["output_text"]);
}

TEST_F(ServerApi, MaxTokensDefaultsTo16) {
  const json r = post("/v1/completions", {{"prompt", "The dog"}, {"ignore_eos", true}});
  EXPECT_EQ(r["usage"]["completion_tokens"], 16);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerApi, StreamedCompletionEqualsWholeOne) {
  const json ref = reference();
  const json body = {
      {"prompt", ref["prompt"]}, {"max_tokens", 64}, {"temperature", 0}, {"stream_options", {{"include_usage", true}}}};
  const auto chunks = stream("/v1/completions", body);
  std::string text;
  json finish = nullptr;
  ASSERT_GE(chunks.size(), 3u);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    const json& c = chunks[i];
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_EQ(c["id"], chunks[0]["id"]);
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());  // include_usage: null until the last chunk
    ASSERT_EQ(c["choices"].size(), 1u);
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, ref["output_text"]);
  EXPECT_EQ(finish, "length");
  const json& last = chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 64);
  EXPECT_EQ(last["usage"]["prompt_tokens"], 5);
}

TEST_F(ServerApi, ChatUsesThePlainTemplateAndStreamsRoleThenContent) {
  const json ref = reference();
  const json body = {{"model", "stories260K"},
                     {"messages", {{{"role", "user"}, {"content", ref["prompt"]}}}},
                     {"max_completion_tokens", 64},
                     {"temperature", 0}};
  const json r = post("/v1/chat/completions", body);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  // stories260K has no chat template: one user message is the prompt itself.
  EXPECT_EQ(r["choices"][0]["message"]["content"], ref["output_text"]);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 64);

  const auto chunks = stream("/v1/chat/completions", body);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 1; i < chunks.size(); ++i) {
    const json& d = chunks[i]["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("role"));
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, ref["output_text"]);
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(chunks.back()["choices"][0]["delta"].empty());
}

TEST_F(ServerApi, ChatDefaultsToTheRestOfTheContext) {
  const json r =
      post("/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"ignore_eos", true}, {"temperature", 0}});
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>(), 512);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerApi, StopStringsSeedsAndChoices) {
  const json stop = post("/v1/completions",
                         {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}, {"stop", "Lily"}});
  EXPECT_EQ(stop["choices"][0]["text"], ", there was a little girl named ");
  EXPECT_EQ(stop["choices"][0]["finish_reason"], "stop");
  const json stops =
      post("/v1/completions",
           {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}, {"stop", {"zzz", "girl"}}});
  EXPECT_EQ(stops["choices"][0]["text"], ", there was a little ");

  const json body = {{"prompt", "The cat"}, {"max_tokens", 24}, {"temperature", 1.0},
                     {"seed", 42},          {"n", 3},           {"ignore_eos", true}};
  const json a = post("/v1/completions", body), b = post("/v1/completions", body);
  ASSERT_EQ(a["choices"].size(), 3u);
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["index"], i);
    EXPECT_EQ(a["choices"][i]["text"], b["choices"][i]["text"]);  // same seed, same texts
    texts.insert(a["choices"][i]["text"].get<std::string>());
  }
  EXPECT_GT(texts.size(), 1u);  // each choice has its own stream
  EXPECT_EQ(a["usage"]["completion_tokens"], 3 * 24);

  // n > 1 streams: every choice's chunks carry its index, each finishes once.
  json sb = body;
  const auto chunks = stream("/v1/completions", sb);
  std::map<int, std::string> streamed;
  std::map<int, int> finishes;
  for (const json& c : chunks) {
    const json& ch = c["choices"][0];
    streamed[ch["index"].get<int>()] += ch["text"].get<std::string>();
    if (!ch["finish_reason"].is_null()) ++finishes[ch["index"].get<int>()];
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streamed[i], a["choices"][i]["text"]);
    EXPECT_EQ(finishes[i], 1);
  }
}

TEST_F(ServerApi, CompletionLogprobsAndEcho) {
  const json r =
      post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"logprobs", 3}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 8u);
  ASSERT_EQ(lp["token_logprobs"].size(), 8u);
  ASSERT_EQ(lp["top_logprobs"].size(), 8u);
  ASSERT_EQ(lp["text_offset"].size(), 8u);
  EXPECT_EQ(lp["tokens"][0], ",");
  EXPECT_NEAR(lp["token_logprobs"][0].get<double>(), reference()["first_position_top10"][0]["logprob"].get<double>(),
              5e-3);
  for (size_t i = 0; i < 8; ++i) {
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 3u);
    EXPECT_LE(top.size(), 4u);
    // Greedy: the sampled token is the most likely one.
    double best = -1e9;
    for (const auto& [tok, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), best);
    if (i) {
      EXPECT_GT(lp["text_offset"][i].get<int>(), lp["text_offset"][i - 1].get<int>());
    }
  }
  const json echo =
      post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(echo["choices"][0]["text"].get<std::string>().rfind("Once upon a time, there", 0), 0u);
}

TEST_F(ServerApi, ChatLogprobs) {
  const json r = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                                               {"max_tokens", 5},
                                               {"temperature", 0},
                                               {"logprobs", true},
                                               {"top_logprobs", 2}});
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  EXPECT_EQ(content[0]["token"], ",");
  EXPECT_EQ(content[0]["bytes"], json::array({int(',')}));
  ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(content[0]["top_logprobs"][0]["token"], ",");
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], " there");
  const json plain =
      post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}});
  EXPECT_TRUE(plain["choices"][0]["logprobs"].is_null());
}

TEST_F(ServerApi, CacheSaltIsolatesThePrefixCacheAndPriorityIsAccepted) {
  std::vector<int> prompt(40, 301);
  prompt[0] = 1;
  auto cached = [&](const std::string& salt, int priority) {
    const json r =
        post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}, {"cache_salt", salt}, {"priority", priority}});
    return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  };
  EXPECT_EQ(cached("salt-a", 0), 0);
  EXPECT_EQ(cached("salt-b", -3), 0);  // another tenant: no reuse
  EXPECT_EQ(cached("salt-a", 7), 32);  // the same tenant: two full blocks reused
}

TEST_F(ServerApi, KeepAliveAndPipelining) {
  HttpConnection c(port());
  for (int i = 0; i < 3; ++i) {
    const HttpResponse r = c.request("POST", "/v1/completions", json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump());
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("connection"), "keep-alive");
  }
  // Two requests in one write: two responses, in order.
  const std::string a = json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump();
  const std::string b = json({{"prompt", "Hi"}, {"max_tokens", 3}, {"ignore_eos", true}}).dump();
  auto raw = [](const std::string& body) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  c.write_raw(raw(a) + raw(b) + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read_response().json()["usage"]["completion_tokens"].get<int>() <= 2, true);
  EXPECT_EQ(c.read_response().json()["usage"]["completion_tokens"], 3);
  EXPECT_EQ(c.read_response().json()["status"], "ok");
}

// A body that arrives after the parser has emptied the read buffer, while a
// read is pending: the new bytes must be the body, not stale buffer content.
TEST_F(ServerApi, ABodyArrivingAfterThePreviousResponseIsReadIntact) {
  HttpConnection c(port());
  const std::string a = json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump();
  const std::string b = json({{"prompt", "Hi"}, {"max_tokens", 3}, {"ignore_eos", true}}).dump();
  auto head = [](const std::string& body) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n";
  };
  const size_t half = b.size() / 2;
  c.write_raw(head(a) + a + head(b) + b.substr(0, half));
  EXPECT_EQ(c.read_response().status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b's head and half its body are parsed
  c.write_raw(b.substr(half));
  const HttpResponse r = c.read_response();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 3);
}

TEST_F(ServerApi, ExpectContinue) {
  HttpConnection c(port());
  const std::string body = json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump();
  c.write_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n");
  std::string got;
  char ch;
  while (got.find("\r\n\r\n") == std::string::npos) {
    c.socket().read_some(boost::asio::buffer(&ch, 1));
    got += ch;
  }
  EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
  c.write_raw(body);
  EXPECT_EQ(c.read_response().status, 200);
}

}  // namespace
}  // namespace pagoda::testing

namespace pagoda::testing {
namespace {

// --chat-template picks a family; the rendered prompt is what the engine sees
// (a completion of the same text gives the same tokens), and a conversation
// the family's template refuses is a 400.
TEST(ServerChatTemplate, OverrideRendersThatFamily) {
  ServerProcess s({"--chat-template", "chatml"});
  const json chat = http_post(s.port(), "/v1/chat/completions",
                              {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                               {"max_tokens", 8},
                               {"temperature", 0},
                               {"ignore_eos", true}})
                        .json();
  const json same = http_post(s.port(), "/v1/completions",
                              {{"prompt", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
                               {"max_tokens", 8},
                               {"temperature", 0},
                               {"ignore_eos", true}})
                        .json();
  EXPECT_EQ(chat["usage"]["prompt_tokens"], same["usage"]["prompt_tokens"]);
  EXPECT_GT(chat["usage"]["prompt_tokens"].get<int>(), 10);
  EXPECT_EQ(chat["choices"][0]["message"]["content"], same["choices"][0]["text"]);
  EXPECT_EQ(s.stop(), 0);

  ServerProcess gemma({"--chat-template", "gemma"});
  const HttpResponse r = http_post(
      gemma.port(), "/v1/chat/completions",
      {{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "messages");
  EXPECT_NE(r.body.find("System role not supported"), std::string::npos) << r.body;
  EXPECT_EQ(gemma.stop(), 0);
}

// A Jinja file given to --chat-template renders through the Jinja engine like
// the built-in family; a template that does not parse leaves completions
// working and refuses chat requests with the reason; a template's
// raise_exception is a 400 with its message.
TEST(ServerChatTemplate, JinjaFileAndBrokenTemplate) {
  const std::string dir = std::string(PAGODA_SOURCE_DIR) + "/tests/chat/templates/";
  ServerProcess s({"--chat-template", dir + "chatml.jinja"});
  const json chat = http_post(s.port(), "/v1/chat/completions",
                              {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}})
                        .json();
  const json same =
      http_post(s.port(), "/v1/completions",
                {{"prompt", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"}, {"max_tokens", 4}})
          .json();
  EXPECT_EQ(chat["usage"]["prompt_tokens"], same["usage"]["prompt_tokens"]);
  EXPECT_EQ(s.stop(), 0);

  const std::string broken = ::testing::TempDir() + "pagoda_broken_template.jinja";
  std::ofstream(broken) << "{% for m in messages %}{{ m.content }";
  ServerProcess b({"--chat-template", broken});
  const HttpResponse completion = http_post(b.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_EQ(completion.status, 200) << completion.body;
  const HttpResponse refused =
      http_post(b.port(), "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("chat template is unusable"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("syntax error"), std::string::npos) << refused.body;
  EXPECT_EQ(b.stop(), 0);

  ServerProcess gemma({"--chat-template", dir + "gemma.jinja"});
  const HttpResponse r = http_post(
      gemma.port(), "/v1/chat/completions",
      {{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("System role not supported"), std::string::npos) << r.body;
  EXPECT_EQ(gemma.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
