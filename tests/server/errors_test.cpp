// Every error status the server sends, in OpenAI's error format, and that a
// refused request leaves the engine untouched.
#include <gtest/gtest.h>

#include <thread>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

// {"error": {"message", "type", "param", "code"}} with the given status.
void expect_error(const HttpResponse& r, int status, const std::string& param = "", const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json j = json::parse(r.body);
  ASSERT_TRUE(j.contains("error")) << r.body;
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
}

class ServerBadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-body-size", "4096"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0);
    delete server_;
  }
  static uint16_t port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* ServerBadInput::server_ = nullptr;

TEST_F(ServerBadInput, BadRequestsGet400NamingTheFieldAndChangeNothing) {
  const double received = metrics(port()).at("pagoda_requests_received_total");
  const json ids_too_long = json(std::vector<int>(600, 5));
  const std::vector<std::pair<json, std::string>> completions = {
      {{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {{{"prompt", "x"}, {"temperature", 3.5}}, "temperature"},
      {{{"prompt", "x"}, {"top_p", 7}}, "top_p"},
      {{{"prompt", "x"}, {"top_k", -5}}, "top_k"},
      {{{"prompt", "x"}, {"min_p", 2}}, "min_p"},
      {{{"prompt", "x"}, {"presence_penalty", -9}}, "presence_penalty"},
      {{{"prompt", "x"}, {"max_tokens", -3}}, "max_tokens"},
      {{{"prompt", "x"}, {"max_tokens", 2.5}}, "max_tokens"},
      {{{"prompt", "x"}, {"n", 0}}, "n"},
      {{{"prompt", "x"}, {"n", 1000}}, "n"},
      {{{"prompt", "x"}, {"logprobs", 30}}, "logprobs"},
      {{{"prompt", "x"}, {"logprobs", true}}, "logprobs"},
      {{{"prompt", "x"}, {"stop", {"a", 3}}}, "stop"},
      {{{"prompt", "x"}, {"stop", ""}}, "stop"},
      {{{"prompt", "x"}, {"seed", "abc"}}, "seed"},
      {{{"prompt", "x"}, {"priority", "high"}}, "priority"},
      {{{"prompt", "x"}, {"cache_salt", 5}}, "cache_salt"},
      {{{"prompt", "x"}, {"ignore_eos", 1}}, "ignore_eos"},
      {{{"prompt", "x"}, {"stream", "yes"}}, "stream"},
      {{{"prompt", "x"}, {"stream_options", {{"include_usage", true}}}}, "stream_options"},
      {{{"prompt", "x"}, {"echo", true}, {"logprobs", 2}, {"stream", true}}, "echo"},
      {{{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens"},  // only with echo
      {{{"max_tokens", 3}}, "prompt"},
      {{{"prompt", 42}}, "prompt"},
      {{{"prompt", {1, 600}}}, "prompt"},  // a token id outside the vocabulary of 512
      {{{"prompt", {1, -1}}}, "prompt"},
      {{{"prompt", json::array()}}, "prompt"},
      {{{"prompt", {"a", 5}}}, "prompt"},  // a list of prompts holds prompts only
      {{{"prompt", "x"}, {"tools", {{{"type", "function"}}}}}, "tools"},
  };
  for (const auto& [body, param] : completions) expect_error(http_post(port(), "/v1/completions", body), 400, param);
  // Too long for the context (512): the prompt alone, or with max_tokens.
  expect_error(http_post(port(), "/v1/completions", {{"prompt", ids_too_long}}), 400, "prompt",
               "context_length_exceeded");
  expect_error(http_post(port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 600}}), 400, "max_tokens",
               "context_length_exceeded");

  const std::vector<std::pair<json, std::string>> chats = {
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", "hello"}}, "messages"},
      {{{"messages", {{{"role", "robot"}, {"content", "hi"}}}}}, "messages"},
      {{{"messages", {{{"content", "hi"}}}}}, "messages"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, "messages"},
      {{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"top_logprobs", 2}}, "top_logprobs"},
      {{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_completion_tokens", 0}}, "max_completion_tokens"},
      {{{"prompt", "hi"}}, "messages"},
  };
  for (const auto& [body, param] : chats) expect_error(http_post(port(), "/v1/chat/completions", body), 400, param);

  // Not JSON, or not an object.
  expect_error(http_post_raw(port(), "/v1/completions", "{\"prompt\": \"x\", "), 400);
  expect_error(http_post_raw(port(), "/v1/completions", "[1, 2]"), 400);
  expect_error(http_post_raw(port(), "/v1/chat/completions", "null"), 400);

  // Not one of them reached the engine.
  EXPECT_EQ(metrics(port()).at("pagoda_requests_received_total"), received);
  EXPECT_TRUE(engine_idle(port()));
}

TEST_F(ServerBadInput, UnknownPathsAndMethods) {
  expect_error(http_get(port(), "/v1/nothing"), 404);
  expect_error(http_post(port(), "/v2/completions", {{"prompt", "x"}}), 404);
  expect_error(http_get(port(), "/v1/completions"), 405);
  expect_error(http_post(port(), "/v1/models", json::object()), 405);
  expect_error(http_post(port(), "/health", json::object()), 405);
}

TEST_F(ServerBadInput, BodyTooLargeGets413) {
  const std::string big = json({{"prompt", std::string(20000, 'a')}}).dump();
  HttpConnection c(port());
  const HttpResponse r = c.request("POST", "/v1/completions", big);
  expect_error(r, 413, "", "request_too_large");
  EXPECT_EQ(r.header("connection"), "close");
  // The server still serves.
  EXPECT_EQ(http_post(port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}).status, 200);
}

TEST_F(ServerBadInput, MalformedHttpGets400) {
  HttpConnection c(port());
  c.write_raw("THIS IS NOT HTTP\r\n\r\n");
  const HttpResponse r = c.read_response();
  expect_error(r, 400);
  EXPECT_TRUE(c.peer_closed_within(std::chrono::seconds(5)));
}

TEST(ServerErrors, ApiKeyGuardsV1ButNotHealthOrMetrics) {
  ServerProcess s({"--api-key", "sekrit"});
  const HttpResponse none = http_get(s.port(), "/v1/models");
  expect_error(none, 401, "", "invalid_api_key");
  EXPECT_EQ(none.header("www-authenticate"), "Bearer");
  expect_error(http_get(s.port(), "/v1/models", {{"Authorization", "Bearer wrong"}}), 401);
  expect_error(http_post(s.port(), "/v1/completions", {{"prompt", "x"}}, {{"Authorization", "sekrit"}}), 401);
  EXPECT_EQ(http_get(s.port(), "/v1/models", {{"Authorization", "Bearer sekrit"}}).status, 200);
  EXPECT_EQ(
      http_post(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}, {{"Authorization", "Bearer sekrit"}})
          .status,
      200);
  EXPECT_EQ(http_get(s.port(), "/health").status, 200);
  EXPECT_EQ(http_get(s.port(), "/metrics").status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerErrors, FullWaitingQueueGets429WithRetryAfter) {
  // One sequence runs, one may wait; the next is refused.
  ServerProcess s({"--max-num-seqs", "1", "--max-waiting", "1", "--inject-faults", "slow=1,slow_ms=20"});
  const json long_request = {{"prompt", "Once"}, {"max_tokens", 400}, {"ignore_eos", true}, {"stream", true}};
  HttpConnection running(s.port()), waiting(s.port());
  running.send("POST", "/v1/completions", long_request.dump());
  ASSERT_EQ(running.read_head().status, 200);
  waiting.send("POST", "/v1/completions", long_request.dump());
  ASSERT_TRUE(eventually([&] { return metrics(s.port()).at("pagoda_num_requests_waiting") == 1; }));
  const HttpResponse r = http_post(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}});
  expect_error(r, 429, "", "rate_limit_exceeded");
  EXPECT_EQ(r.header("retry-after"), "1");
  running.close();
  waiting.close();
  ASSERT_TRUE(eventually([&] { return engine_idle(s.port()); }));
  const PromMetrics m = metrics(s.port());
  EXPECT_EQ(failures(m, "rejected"), 1);
  EXPECT_EQ(failures(m, "abort"), 2);
  EXPECT_EQ(m.at("pagoda_requests_received_total"), 3);
  EXPECT_EQ(terminal_total(m), 3);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerErrors, FailedStepGives500OrAStreamErrorEvent) {
  {
    // Step 1 is the first request's prefill: it fails before any output.
    ServerProcess s({"--inject-faults", "at_step=1"});
    expect_error(http_post(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}}), 500);
    EXPECT_EQ(http_post(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}}).status, 200);
    EXPECT_TRUE(eventually([&] { return failures(metrics(s.port()), "error") == 1; }));
    EXPECT_EQ(s.stop(), 0);
  }
  {
    // Step 4 fails after three tokens were streamed: the error is the last event.
    ServerProcess s({"--inject-faults", "at_step=4"});
    const HttpResponse r = http_post(s.port(), "/v1/chat/completions",
                                     {{"messages", {{{"role", "user"}, {"content", "Once"}}}},
                                      {"max_tokens", 20},
                                      {"ignore_eos", true},
                                      {"stream", true}});
    EXPECT_EQ(r.status, 200);
    const auto events = sse_payloads(r.body);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.back(), "[DONE]");
    const json err = json::parse(events[events.size() - 2]);
    ASSERT_TRUE(err.contains("error")) << r.body;
    EXPECT_EQ(err["error"]["type"], "server_error");
    int content = 0;
    for (size_t i = 0; i + 2 < events.size(); ++i)
      if (json::parse(events[i])["choices"][0]["delta"].contains("content")) ++content;
    EXPECT_EQ(content, 4);  // the role chunk's "" and three tokens
    EXPECT_EQ(s.stop(), 0);
  }
}

// A lost device (a sticky GPU fault, injected at step 4): the stream ends
// with an error event naming it, /health says why, and the server exits 4
// within 2 s, for its supervisor to restart it.
TEST(ServerErrors, ALostDeviceEndsTheStreamsAndTheServerExitsWithCode4) {
  ServerProcess s({"--inject-faults", "lost_at_step=4"});
  const HttpResponse r = http_post(s.port(), "/v1/completions",
                                   {{"prompt", "Once"}, {"max_tokens", 20}, {"ignore_eos", true}, {"stream", true}});
  const auto lost = std::chrono::steady_clock::now();
  EXPECT_EQ(r.status, 200);
  const auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 2u);
  const json err = json::parse(events[events.size() - 2]);
  ASSERT_TRUE(err.contains("error")) << r.body;
  EXPECT_NE(err["error"]["message"].get<std::string>().find("the device was lost"), std::string::npos) << r.body;
  // For 0.75 s /health says why (the engine publishes its state just after the step).
  std::string health;
  EXPECT_TRUE(eventually(
      [&] {
        const HttpResponse h = http_get(s.port(), "/health");
        health = h.body;
        return h.status == 503 && health.find("device_lost") != std::string::npos;
      },
      std::chrono::milliseconds(500)))
      << health;
  while (s.running() && std::chrono::steady_clock::now() - lost < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - lost).count();
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(s.stop(), 4);
  EXPECT_NE(s.stderr_text().find("the device was lost"), std::string::npos);
}

TEST(ServerErrors, TimeoutBeforeOutputGets504) {
  // Every step sleeps 400 ms; requests may take 300 ms.
  ServerProcess s({"--request-timeout", "0.3", "--inject-faults", "slow=1,slow_ms=400"});
  const HttpResponse r = http_post(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}});
  expect_error(r, 504, "", "timeout");
  // Streaming, the first token came out (after 400 ms): the timeout is an error event.
  const HttpResponse st =
      http_post(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}, {"stream", true}});
  EXPECT_EQ(st.status, 200);
  const auto events = sse_payloads(st.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(json::parse(events[events.size() - 2])["error"]["code"], "timeout");
  EXPECT_TRUE(eventually([&] { return failures(metrics(s.port()), "timeout") == 2; }));
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
