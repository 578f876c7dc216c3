// The HTTP surface beyond generation, on the real server and stories260K:
// `model` checked against the served names (404 model_not_found), unknown
// fields ignored but named in X-Pagoda-Ignored-Fields and logged once per
// name, /tokenize, /detokenize, /apply-template and /version with vLLM's and
// llama.cpp's shapes, CORS (--allowed-origins) with OPTIONS preflights, HEAD
// on GET routes, Allow on 405, and the auth scheme in any case.
#include <gtest/gtest.h>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

const Headers kAuth = {{"Authorization", "Bearer sekrit"}};
constexpr const char* kOrigin = "https://app.example";

class HttpSurface : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--api-key", "sekrit", "--served-model-name", "stories260K", "tiny-story",
                                 "--allowed-origins", std::string(kOrigin) + ", http://localhost:3000"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0);
    delete server_;
  }
  static uint16_t port() { return server_->port(); }
  static HttpResponse post(const std::string& path, const json& body, Headers h = kAuth) {
    return http_post(port(), path, body, h);
  }
  static ServerProcess* server_;
};
ServerProcess* HttpSurface::server_ = nullptr;

HttpResponse http_request(uint16_t port, const std::string& method, const std::string& target, const Headers& h) {
  HttpConnection c(port);
  return c.request(method, target, "", h);
}

void expect_error(const HttpResponse& r, int status, const std::string& param, const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  const json e = json::parse(r.body).at("error");
  EXPECT_TRUE(e["message"].is_string()) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
}

TEST_F(HttpSurface, ModelIsCheckedAgainstTheServedNames) {
  const json base = {{"prompt", "Once"}, {"max_tokens", 2}, {"temperature", 0}};
  for (const json& model : {json(nullptr), json("stories260K"), json("tiny-story")}) {
    json body = base;
    if (!model.is_null()) body["model"] = model;
    const HttpResponse r = post("/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["model"], "stories260K");  // responses say the first name
  }
  json bad = base;
  bad["model"] = "gpt-4";
  const HttpResponse missing = post("/v1/completions", bad);
  expect_error(missing, 404, "model", "model_not_found");
  EXPECT_EQ(missing.json()["error"]["message"], "The model `gpt-4` does not exist.");
  const json chat = {{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  expect_error(post("/v1/chat/completions", chat), 404, "model", "model_not_found");
  bad["model"] = 5;
  expect_error(post("/v1/completions", bad), 400, "model");
  expect_error(post("/tokenize", {{"model", "nope"}, {"prompt", "x"}}), 404, "model", "model_not_found");
  // /v1/models lists every served name.
  const json models = http_get(port(), "/v1/models", kAuth).json();
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(models["data"][1]["id"], "tiny-story");
  EXPECT_EQ(http_get(port(), "/v1/models/tiny-story", kAuth).status, 200);
  expect_error(http_get(port(), "/v1/models/gpt-4", kAuth), 404, "model", "model_not_found");
}

TEST_F(HttpSurface, UnknownFieldsAreNamedInAHeaderAndLoggedOncePerName) {
  const json body = {{"prompt", "Once"}, {"max_tokens", 1}, {"frobnicate_a", 1}, {"zz_frobnicate_b", true}};
  for (int i = 0; i < 2; ++i) {
    const HttpResponse r = post("/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-pagoda-ignored-fields"), "frobnicate_a, zz_frobnicate_b");
  }
  // Streams carry it too; fields of the API (even unimplemented ones) do not appear.
  json stream = {{"prompt", "Once"}, {"max_tokens", 1}, {"stream", true}, {"user", "u"}, {"metadata", json::object()}};
  const auto stream_header = [&] {
    HttpConnection c(port());
    c.send("POST", "/v1/completions", stream.dump(), kAuth);
    const std::string h = c.read_head().header("x-pagoda-ignored-fields");
    c.read_events();
    return h;
  };
  EXPECT_EQ(stream_header(), "");
  stream["frobnicate_a"] = 1;
  stream["bad\r\nname"] = 2;  // never breaks the header
  EXPECT_EQ(stream_header(), "bad%0D%0Aname, frobnicate_a");
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                     {"max_tokens", 1},
                     {"tools", json::array()},
                     {"chat_template_kwargs", json::object()},
                     {"top_logprobs_typo", 3}};
  EXPECT_EQ(post("/v1/chat/completions", chat).header("x-pagoda-ignored-fields"), "top_logprobs_typo");
  const auto count = [](const std::string& log, const std::string& s) {
    size_t n = 0;
    for (size_t at = log.find(s); at != std::string::npos; at = log.find(s, at + 1)) ++n;
    return n;
  };
  ASSERT_TRUE(eventually([&] { return count(server_->stderr_text(), "'zz_frobnicate_b'") == 1; }));
  EXPECT_EQ(count(server_->stderr_text(), "'frobnicate_a'"), 1u);
}

TEST_F(HttpSurface, TokenizeCountsWhatGenerationCounts) {
  const std::string text = "Once upon a time";
  const HttpResponse t = post("/tokenize", {{"prompt", text}, {"return_token_strs", true}});
  ASSERT_EQ(t.status, 200) << t.body;
  const json tj = t.json();
  const auto tokens = tj["tokens"].get<std::vector<int>>();
  EXPECT_EQ(tj["count"], tokens.size());
  EXPECT_EQ(tj["max_model_len"], 512);
  EXPECT_EQ(tj["token_strs"].size(), tokens.size());
  const json gen = post("/v1/completions", {{"prompt", text}, {"max_tokens", 1}}).json();
  EXPECT_EQ(gen["usage"]["prompt_tokens"], tokens.size());
  const json plain = post("/tokenize", {{"prompt", text}, {"add_special_tokens", false}}).json();
  EXPECT_EQ(plain["count"], tokens.size() - 1);  // no BOS
  EXPECT_FALSE(plain.contains("token_strs"));
  // The token ids round-trip through /detokenize.
  const HttpResponse d = post("/detokenize", {{"tokens", plain["tokens"]}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json()["prompt"], text);
  // A chat body counts as /v1/chat/completions counts its prompt.
  const json messages = {{{"role", "user"}, {"content", text}}, {{"role", "assistant"}, {"content", "Hi"}}};
  const json chat_count = post("/tokenize", {{"messages", messages}}).json();
  const json chat = post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}}).json();
  EXPECT_EQ(chat_count["count"], chat["usage"]["prompt_tokens"]);
}

TEST_F(HttpSurface, TokenizeAndDetokenizeRefuseBadInput) {
  expect_error(post("/tokenize", json::object()), 400, "prompt");
  expect_error(post("/tokenize", {{"prompt", 5}}), 400, "prompt");
  expect_error(post("/tokenize", {{"prompt", "x"}, {"messages", json::array({{{"role", "user"}}})}}), 400, "prompt");
  expect_error(post("/tokenize", {{"messages", json::array()}}), 400, "messages");
  expect_error(post("/tokenize", {{"prompt", "x"}, {"add_special_tokens", "yes"}}), 400, "add_special_tokens");
  expect_error(http_post_raw(port(), "/tokenize", "{not json", kAuth), 400, "");
  expect_error(post("/detokenize", json::object()), 400, "tokens");
  expect_error(post("/detokenize", {{"tokens", {1, 600}}}), 400, "tokens");  // the vocabulary is 512
  expect_error(post("/detokenize", {{"tokens", {1, -1}}}), 400, "tokens");
  expect_error(post("/detokenize", {{"tokens", {"a"}}}), 400, "tokens");
  expect_error(post("/detokenize", {{"tokens", "abc"}}), 400, "tokens");
  EXPECT_EQ(post("/detokenize", {{"tokens", json::array()}}).json()["prompt"], "");
  // The API key guards them; a GET is 405.
  expect_error(post("/tokenize", {{"prompt", "x"}}, {}), 401, "");
  expect_error(http_get(port(), "/detokenize", kAuth), 405, "");
}

TEST_F(HttpSurface, ApplyTemplateRendersTheChatBodyAndVersionAnswers) {
  const json messages = {{{"role", "user"}, {"content", "Hello"}}};
  const std::string tmpl =
      "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% "
      "endif %}";
  HttpResponse r = post("/apply-template", {{"messages", messages}, {"chat_template", tmpl}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["prompt"], "[user]Hello[assistant]");
  r = post("/apply-template", {{"messages", messages}, {"chat_template", tmpl}, {"add_generation_prompt", false}});
  EXPECT_EQ(r.json()["prompt"], "[user]Hello");
  // The same template counts the same in /tokenize and the chat endpoint.
  const json tok = post("/tokenize", {{"messages", messages}, {"chat_template", tmpl}}).json();
  const json chat =
      post("/v1/chat/completions", {{"messages", messages}, {"chat_template", tmpl}, {"max_tokens", 1}}).json();
  EXPECT_EQ(tok["count"], chat["usage"]["prompt_tokens"]);
  expect_error(post("/apply-template", {{"messages", messages}, {"chat_template", "{% if %}"}}), 400, "chat_template");
  expect_error(post("/apply-template", {{"messages", "hi"}}), 400, "messages");
  const HttpResponse v = http_get(port(), "/version");  // no key needed, as for /health
  ASSERT_EQ(v.status, 200);
  EXPECT_FALSE(v.json()["version"].get<std::string>().empty());
}

TEST_F(HttpSurface, CorsForAllowedOriginsOnlyAndPreflightsWithoutAKey) {
  const HttpResponse ok = http_get(port(), "/v1/models", {{"Authorization", "Bearer sekrit"}, {"Origin", kOrigin}});
  EXPECT_EQ(ok.header("access-control-allow-origin"), kOrigin);
  EXPECT_EQ(ok.header("vary"), "Origin");
  EXPECT_NE(ok.header("access-control-expose-headers").find("X-Pagoda-Ignored-Fields"), std::string::npos);
  // Errors carry it too, so the page can read them.
  EXPECT_EQ(http_get(port(), "/v1/models", {{"Origin", kOrigin}}).header("access-control-allow-origin"), kOrigin);
  const HttpResponse other =
      http_get(port(), "/v1/models", {{"Authorization", "Bearer sekrit"}, {"Origin", "https://evil.example"}});
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.header("access-control-allow-origin"), "");
  HttpConnection c(port());
  const HttpResponse pre = c.request("OPTIONS", "/v1/chat/completions", "",
                                     {{"Origin", "http://localhost:3000"},
                                      {"Access-Control-Request-Method", "POST"},
                                      {"Access-Control-Request-Headers", "x-stainless-os, content-type"}});
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.body, "");
  EXPECT_EQ(pre.header("access-control-allow-origin"), "http://localhost:3000");
  EXPECT_EQ(pre.header("access-control-allow-methods"), "POST, OPTIONS");
  EXPECT_EQ(pre.header("access-control-allow-headers"), "Authorization, Content-Type, x-stainless-os, content-type");
  EXPECT_EQ(pre.header("access-control-max-age"), "600");
  // The connection lives on after the 204.
  EXPECT_EQ(c.request("GET", "/health").status, 200);
  const HttpResponse denied = http_request(port(), "OPTIONS", "/v1/completions", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(denied.status, 204);
  EXPECT_EQ(denied.header("allow"), "POST, OPTIONS");
  EXPECT_EQ(denied.header("access-control-allow-origin"), "");
  EXPECT_EQ(http_request(port(), "OPTIONS", "/nowhere", {{"Origin", kOrigin}}).status, 404);
}

TEST_F(HttpSurface, HeadAllowAndBearerInAnyCase) {
  const HttpResponse get = http_get(port(), "/health");
  HttpConnection c(port());
  const HttpResponse head = c.request("HEAD", "/health");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.header("content-length"), get.header("content-length"));
  EXPECT_EQ(head.header("content-type"), "application/json");
  EXPECT_EQ(c.request("HEAD", "/v1/models", "", kAuth).status, 200);
  EXPECT_EQ(c.request("HEAD", "/v1/models").status, 401);
  EXPECT_EQ(c.request("HEAD", "/version").status, 200);
  const HttpResponse events = c.request("HEAD", "/debug/events", "", kAuth);  // a stream: the head alone
  EXPECT_EQ(events.status, 200);
  EXPECT_EQ(events.header("content-type"), "text/event-stream; charset=utf-8");
  EXPECT_EQ(c.request("GET", "/health").body, get.body);  // still in step
  const HttpResponse post405 = c.request("POST", "/health", "{}");
  expect_error(post405, 405, "", "method_not_allowed");
  EXPECT_EQ(post405.header("allow"), "GET, HEAD, OPTIONS");
  const HttpResponse get405 = c.request("GET", "/v1/completions", "", kAuth);
  EXPECT_EQ(get405.status, 405);
  EXPECT_EQ(get405.header("allow"), "POST, OPTIONS");
  for (const char* scheme : {"bearer", "BEARER", "Bearer", "bEaReR"})
    EXPECT_EQ(http_get(port(), "/v1/models", {{"Authorization", std::string(scheme) + " sekrit"}}).status, 200)
        << scheme;
  EXPECT_EQ(http_get(port(), "/v1/models", {{"Authorization", "Basic sekrit"}}).status, 401);
}

TEST(HttpSurfaceDefaults, NoCorsHeadersWithoutAllowedOrigins) {
  ServerProcess s;
  const HttpResponse r = http_get(s.port(), "/v1/models", {{"Origin", kOrigin}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("access-control-allow-origin"), "");
  const HttpResponse pre = http_request(s.port(), "OPTIONS", "/v1/completions", {{"Origin", kOrigin}});
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("allow"), "POST, OPTIONS");
  EXPECT_EQ(pre.header("access-control-allow-origin"), "");
  EXPECT_EQ(pre.header("access-control-allow-methods"), "");
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
