// The vLLM-style sampling fields on the real server with stories260K:
// logit_bias, stop_token_ids, min_tokens, include_stop_str_in_output,
// skip_special_tokens, truncate_prompt_tokens and best_of each change the
// output as documented (and stop_reason names the stop that ended it), and each bad value is a 400 naming its field
// that leaves the engine untouched.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gguf/file.h"
#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

constexpr const char* kPrompt = "Once upon a time";

// The id of a generated token's piece: a normal token's before a byte token's
// (',' is both a token and the byte fallback <0x2C>; the model generates the former).
int32_t id_of(const Tokenizer& tok, const std::string& piece) {
  int32_t fallback = -1;
  for (int32_t id = 0; id < int32_t(tok.vocab_size()); ++id) {
    if (tok.decode_bytes(id) != piece) continue;
    if (tok.token_type(id) == TokenType::Normal) return id;
    if (fallback < 0) fallback = id;
  }
  return fallback;
}

class SamplingFields : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--io-threads", "1"});
    tok_ = new Tokenizer(Tokenizer::from_gguf(GgufFile::open(stories_model())));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->stderr_text();
    delete server_;
    delete tok_;
  }
  static json complete(json body, int want_status = 200) {
    body["prompt"] = body.value("prompt", json(kPrompt));
    body["temperature"] = 0;
    const HttpResponse r = http_post(server_->port(), "/v1/completions", body);
    EXPECT_EQ(r.status, want_status) << r.body;
    return r.json();
  }
  // A normal token the model would rarely pick, for the bias tests.
  static int32_t some_token() { return tok_->encode("dragon", false).back(); }
  static ServerProcess* server_;
  static Tokenizer* tok_;
};
ServerProcess* SamplingFields::server_ = nullptr;
Tokenizer* SamplingFields::tok_ = nullptr;

TEST_F(SamplingFields, LogitBiasSteersAndLogprobsShowIt) {
  const json base = complete({{"max_tokens", 4}, {"logprobs", 1}});
  const std::string first = base["choices"][0]["logprobs"]["tokens"][0];
  const int32_t first_id = id_of(*tok_, first);
  ASSERT_GE(first_id, 0) << first;
  // -100 on the greedy token: another one comes first.
  const json banned =
      complete({{"max_tokens", 4}, {"logprobs", 1}, {"logit_bias", {{std::to_string(first_id), -100}}}});
  EXPECT_NE(banned["choices"][0]["logprobs"]["tokens"][0], first);
  // +100 on one token: it is every token, sampled with probability ~1.
  const int32_t x = some_token();
  const json forced = complete({{"max_tokens", 4}, {"logprobs", 1}, {"logit_bias", {{std::to_string(x), 100}}}});
  const json& lp = forced["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lp["tokens"][i], tok_->decode_bytes(x));
    EXPECT_GT(lp["token_logprobs"][i].get<double>(), -1e-3);
  }
  // Chat too.
  const HttpResponse chat = http_post(server_->port(), "/v1/chat/completions",
                                      {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                       {"max_tokens", 3},
                                       {"temperature", 0},
                                       {"logit_bias", {{std::to_string(x), 100}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  const std::string piece = tok_->decode_bytes(x);
  EXPECT_EQ(chat.json()["choices"][0]["message"]["content"], piece + piece + piece);
}

TEST_F(SamplingFields, StopTokenIdsAndMinTokens) {
  const std::string x = std::to_string(some_token());
  const json bias = {{x, 100}};
  // The forced token is a stop id: the generation ends at once, without it.
  json r = complete({{"max_tokens", 8}, {"logit_bias", bias}, {"stop_token_ids", {some_token()}}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["choices"][0]["stop_reason"], some_token());  // vLLM: the stop id that ended it
  EXPECT_EQ(r["choices"][0]["text"], "");
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  // min_tokens masks it for 3 tokens; the 4th is the stop.
  r = complete({{"max_tokens", 8}, {"min_tokens", 3}, {"logit_bias", bias}, {"stop_token_ids", {some_token()}}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
  // The same for EOS (id 2 in stories260K).
  r = complete({{"max_tokens", 8}, {"logit_bias", {{"2", 100}}}});
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  r = complete({{"max_tokens", 8}, {"min_tokens", 5}, {"logit_bias", {{"2", 100}}}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  ASSERT_TRUE(r["choices"][0].contains("stop_reason"));
  EXPECT_TRUE(r["choices"][0]["stop_reason"].is_null());  // EOS is not a stop of the request's own
}

TEST_F(SamplingFields, StopStringsWithIncludeAndMinTokens) {
  const std::string text = complete({{"max_tokens", 24}})["choices"][0]["text"];
  ASSERT_GT(text.size(), 12u);
  const std::string stop = text.substr(4, 3);
  const size_t at = text.find(stop);
  json r = complete({{"max_tokens", 24}, {"stop", {"never said", stop}}});
  EXPECT_EQ(r["choices"][0]["text"], text.substr(0, at));
  EXPECT_EQ(r["choices"][0]["stop_reason"], stop);
  // Streamed, the choice's last chunk says the same; a length end says null.
  const HttpResponse s =
      http_post(server_->port(), "/v1/completions",
                {{"prompt", kPrompt}, {"temperature", 0}, {"max_tokens", 24}, {"stop", stop}, {"stream", true}});
  const auto events = sse_payloads(s.body);
  ASSERT_GE(events.size(), 2u) << s.body;
  const json last = json::parse(events[events.size() - 2]);  // before [DONE]
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop") << last;
  EXPECT_EQ(last["choices"][0]["stop_reason"], stop) << last;
  r = complete({{"max_tokens", 2}, {"stop", "never said"}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(r["choices"][0]["stop_reason"].is_null());
  r = complete({{"max_tokens", 24}, {"stop", stop}, {"include_stop_str_in_output", true}});
  EXPECT_EQ(r["choices"][0]["text"], text.substr(0, at + stop.size()));
  // Past min_tokens the first occurrence is no longer a stop: it is in the text.
  r = complete({{"max_tokens", 24}, {"stop", stop}, {"min_tokens", 20}});
  EXPECT_NE(r["choices"][0]["text"].get<std::string>().find(stop), std::string::npos);
}

TEST_F(SamplingFields, SkipSpecialTokens) {
  // BOS (id 1) is a control token but does not end the generation.
  const json bias = {{"1", 100}};
  json r = complete({{"max_tokens", 3}, {"logit_bias", bias}});
  EXPECT_EQ(r["choices"][0]["text"], "");
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
  r = complete({{"max_tokens", 3}, {"logit_bias", bias}, {"skip_special_tokens", false}});
  EXPECT_EQ(r["choices"][0]["text"], tok_->token_text(1) + tok_->token_text(1) + tok_->token_text(1));
}

TEST_F(SamplingFields, TruncatePromptTokensKeepsTheTail) {
  const std::vector<int32_t> ids = tok_->encode("Once upon a time there was a little girl", true);
  ASSERT_GT(ids.size(), 5u);
  const std::vector<int32_t> tail(ids.end() - 4, ids.end());
  const json full = complete({{"prompt", ids}, {"max_tokens", 8}, {"truncate_prompt_tokens", 4}});
  const json cut = complete({{"prompt", tail}, {"max_tokens", 8}});
  EXPECT_EQ(full["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(full["choices"][0]["text"], cut["choices"][0]["text"]);
  const json text = complete({{"max_tokens", 1}, {"truncate_prompt_tokens", 2}});
  EXPECT_EQ(text["usage"]["prompt_tokens"], 2);
  // -1: up to the model's context, so a short prompt is whole.
  EXPECT_EQ(complete({{"prompt", ids}, {"max_tokens", 1}, {"truncate_prompt_tokens", -1}})["usage"]["prompt_tokens"],
            ids.size());
}

TEST_F(SamplingFields, BadValuesAre400sNamingTheFieldAndChangeNothing) {
  ASSERT_TRUE(eventually([] { return engine_idle(server_->port()); }));
  const double before = terminal_total(metrics(server_->port()));
  const std::pair<json, const char*> cases[] = {
      {{{"logit_bias", {{"abc", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"100000", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"-1", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", 101}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", "x"}}}}, "logit_bias"},
      {{{"logit_bias", json::array({1})}}, "logit_bias"},
      {{{"stop_token_ids", {100000}}}, "stop_token_ids"},
      {{{"stop_token_ids", "2"}}, "stop_token_ids"},
      {{{"min_tokens", 17}}, "min_tokens"},  // max_tokens is 16
      {{{"min_tokens", -1}}, "min_tokens"},
      {{{"include_stop_str_in_output", 1}}, "include_stop_str_in_output"},
      {{{"skip_special_tokens", "no"}}, "skip_special_tokens"},
      {{{"truncate_prompt_tokens", 0}}, "truncate_prompt_tokens"},
      {{{"truncate_prompt_tokens", -2}}, "truncate_prompt_tokens"},
      {{{"truncate_prompt_tokens", 1 << 20}}, "truncate_prompt_tokens"},
      {{{"best_of", 2}}, "best_of"},
  };
  for (const auto& [body, param] : cases) {
    const json r = complete(body, 400);
    EXPECT_EQ(r["error"]["param"], param) << body.dump();
    EXPECT_EQ(r["error"]["type"], "invalid_request_error") << body.dump();
  }
  EXPECT_EQ(complete({{"best_of", 1}, {"max_tokens", 1}})["choices"].size(), 1u);  // best_of == n is fine
  // Only the best_of == n request ran (the counters are published after its step).
  EXPECT_TRUE(eventually([&] { return terminal_total(metrics(server_->port())) == before + 1; }));
  EXPECT_EQ(terminal_total(metrics(server_->port())), before + 1);
}

// lm-evaluation-harness's loglikelihood request: echo, logprobs, max_tokens 0.
// Each continuation token's logprob equals the one the engine reported when
// it generated that token (within 1e-4), the first prompt token has null.
TEST_F(SamplingFields, EchoLogprobsScoreThePromptAsGenerationDid) {
  const std::vector<int32_t> ctx = tok_->encode(kPrompt, true);
  const json gen = complete({{"prompt", ctx}, {"max_tokens", 8}, {"logprobs", 2}});
  const json& glp = gen["choices"][0]["logprobs"];
  std::vector<int32_t> full = ctx;
  for (const auto& piece : glp["tokens"]) {
    full.push_back(id_of(*tok_, piece.get<std::string>()));
    ASSERT_GE(full.back(), 0) << piece;
  }
  const json r = complete({{"prompt", full}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 2}});
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  EXPECT_EQ(r["usage"]["prompt_tokens"], full.size());
  const json& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), full.size());
  ASSERT_EQ(lp["token_logprobs"].size(), full.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"][0], 0);
  for (size_t i = 1; i < full.size(); ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_LE(lp["top_logprobs"][i].size(), 3u);
    EXPECT_GE(lp["top_logprobs"][i].size(), 2u);
  }
  for (size_t j = 0; j < glp["tokens"].size(); ++j) {
    const size_t i = ctx.size() + j;
    EXPECT_EQ(lp["tokens"][i], glp["tokens"][j]);
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), glp["token_logprobs"][j].get<double>(), 1e-4) << j;
  }
  // With tokens generated after the prompt, they follow its entries.
  const json more = complete({{"prompt", ctx}, {"max_tokens", 2}, {"echo", true}, {"logprobs", 1}});
  EXPECT_EQ(more["choices"][0]["logprobs"]["tokens"].size(), ctx.size() + 2);
  EXPECT_EQ(more["choices"][0]["text"].get<std::string>().rfind(tok_->decode(ctx), 0), 0u);
}

TEST_F(SamplingFields, VllmPromptLogprobs) {
  const std::vector<int32_t> ids = tok_->encode(kPrompt, true);
  const json r = complete({{"prompt", ids}, {"max_tokens", 1}, {"prompt_logprobs", 1}});
  const json& plp = r["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(plp.size(), ids.size());
  EXPECT_TRUE(plp[0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) {
    const json& own = plp[i][std::to_string(ids[i])];
    EXPECT_LE(own["logprob"].get<double>(), 0.0);
    EXPECT_GE(own["rank"].get<int>(), 1);
    EXPECT_EQ(own["decoded_token"], tok_->decode_bytes(ids[i]));
    EXPECT_LE(plp[i].size(), 2u);
  }
  EXPECT_FALSE(complete({{"max_tokens", 1}})["choices"][0].contains("prompt_logprobs"));
  // Chat: beside the choices.
  const HttpResponse chat =
      http_post(server_->port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}, {"prompt_logprobs", 0}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_TRUE(chat.json()["prompt_logprobs"][0].is_null());
  EXPECT_GT(chat.json()["prompt_logprobs"].size(), 1u);
  // Refused: max_tokens 0 without echo, out of range, with stream.
  EXPECT_EQ(complete({{"max_tokens", 0}}, 400)["error"]["param"], "max_tokens");
  EXPECT_EQ(complete({{"prompt_logprobs", 21}}, 400)["error"]["param"], "prompt_logprobs");
  EXPECT_EQ(complete({{"prompt_logprobs", 1}, {"stream", true}}, 400)["error"]["param"], "prompt_logprobs");
  EXPECT_TRUE(eventually([] { return engine_idle(server_->port()); }));
}

// A list of prompts: one engine request each, choices prompt-major, usage
// summed; each choice equals the same prompt sent alone; streaming too.
TEST_F(SamplingFields, ListOfPrompts) {
  const std::vector<int32_t> ids = tok_->encode("The cat", true);
  const json prompts = {"Once upon a time", ids, "Lily went"};
  const json body = {{"prompt", prompts}, {"max_tokens", 4}, {"n", 2}, {"echo", true}};
  const json r = complete(body);
  ASSERT_EQ(r["choices"].size(), 6u);
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (size_t p = 0; p < 3; ++p) {
    const json alone = complete({{"prompt", prompts[p]}, {"max_tokens", 4}, {"echo", true}});
    prompt_tokens += alone["usage"]["prompt_tokens"].get<int64_t>();
    completion_tokens += 2 * alone["usage"]["completion_tokens"].get<int64_t>();
    for (size_t j = 0; j < 2; ++j) {
      const json& c = r["choices"][p * 2 + j];
      EXPECT_EQ(c["index"], p * 2 + j);
      EXPECT_EQ(c["text"], alone["choices"][0]["text"]) << p << " " << j;
    }
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(r["usage"]["completion_tokens"], completion_tokens);

  json sbody = body;
  sbody["stream"] = true;
  sbody["temperature"] = 0;
  const HttpResponse s = http_post(server_->port(), "/v1/completions", sbody);
  ASSERT_EQ(s.status, 200) << s.body;
  std::map<int, std::string> texts;
  std::map<int, int> finishes;
  for (const auto& payload : sse_payloads(s.body)) {
    if (payload == "[DONE]") continue;
    const json chunk = json::parse(payload);
    for (const auto& c : chunk["choices"]) {
      texts[c["index"].get<int>()] += c["text"].get<std::string>();
      finishes[c["index"].get<int>()] += !c["finish_reason"].is_null();
    }
  }
  ASSERT_EQ(texts.size(), 6u);
  for (const auto& [i, text] : texts) {
    EXPECT_EQ(text, r["choices"][size_t(i)]["text"]) << i;
    EXPECT_EQ(finishes[i], 1) << i;
  }
  // Bounded: at most 64 prompts; every element a prompt.
  EXPECT_EQ(complete({{"prompt", json(std::vector<std::string>(65, "a"))}}, 400)["error"]["param"], "prompt");
  EXPECT_EQ(complete({{"prompt", {"a", 5}}}, 400)["error"]["param"], "prompt");
  EXPECT_TRUE(eventually([] { return engine_idle(server_->port()); }));
}

}  // namespace
}  // namespace pagoda::testing
