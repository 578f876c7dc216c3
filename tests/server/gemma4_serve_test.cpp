// Gemma 4 served end to end: a synthetic gemma4 (random weights, small,
// byte-level BPE) whose GGUF carries the real Gemma 4 chat template
// (tests/chat/templates/google--gemma-4-31B-it.jinja) and its markers as
// control tokens. The server picks the gemma4 tool-call and reasoning
// parsers from the template by itself; renders thinking off (an empty
// closed thought) and a tool round trip; and reads a call in Gemma's syntax
// back as an OpenAI tool call, whole and streamed. Random weights write no
// calls by themselves, so the output is forced with a GBNF grammar
// (structured_outputs.grammar; the markers spelled with ordinary tokens read
// the same) with thinking off, where the grammar holds from the first token.
// The reasoning side needs the model to open a thought itself (a grammar
// starts after it), which random weights do not: gemma4_output_test.cpp
// checks it on the output path instead.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http_client.h"
#include "server/server_process.h"
#include "testing/build_paths.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string template_text() {
  std::ifstream in(fs::path(PAGODA_SOURCE_DIR) / "tests/chat/templates/google--gemma-4-31B-it.jinja", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tests/model/config_test.cpp's gemma4 shape, with a byte-level vocabulary and Gemma 4's markers.
SyntheticModelSpec gemma4(const std::string& chat_template) {
  SyntheticModelSpec s;
  s.arch = "gemma4";
  s.tokenizer = "gpt2";
  s.n_vocab = 400;
  s.n_ctx = 2048;
  s.n_embd = 64;
  s.n_ff = 128;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_layer = 4;
  s.sliding_window = 16;
  s.sliding_pattern = 2;
  s.head_dim = 32;
  s.head_dim_swa = 16;
  s.n_embd_per_layer = 8;
  s.shared_kv_layers = 2;
  s.special_tokens = {"<|turn>", "<turn|>",          "<|channel>",       "<channel|>", "<|tool_call>", "<tool_call|>",
                      "<|\"|>",  "<|tool_response>", "<tool_response|>", "<|tool>",    "<tool|>",      "<|think|>"};
  s.eos_token = "<turn|>";
  s.chat_template = chat_template;
  return s;
}

// A GBNF grammar whose only sentence is `text`.
json exactly(const std::string& text) {
  std::string lit;
  for (char c : text) lit += c == '"' ? std::string("\\\"") : c == '\n' ? std::string("\\n") : std::string(1, c);
  return {{"grammar", "root ::= \"" + lit + "\""}};
}

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "description": "The weather in a city", "parameters": {"type": "object", "properties": {
  "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}])");

TEST(ServerGemma4, TemplateParsersAndToolCalls) {
  const std::string tmpl = template_text();
  ASSERT_FALSE(tmpl.empty());
  const fs::path dir = fs::temp_directory_path() / ("pagoda-gemma4-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  synthetic_model(gemma4(tmpl)).write(model);
  ServerProcess server({"-m", model});
  const std::string log = server.stderr_text();
  EXPECT_NE(log.find("tool-call parser: gemma4 (auto: from the chat template)"), std::string::npos) << log;
  EXPECT_NE(log.find("reasoning parser: gemma4 (auto: from the chat template)"), std::string::npos) << log;

  // The prompt: thinking off closes an empty thought; a tool result renders in the model's turn.
  const json ask = {{{"role", "user"}, {"content", "Weather in Paris?"}}};
  const json off = {{"enable_thinking", false}};
  HttpResponse r = http_post(server.port(), "/apply-template",
                             {{"messages", ask}, {"tools", kTools}, {"chat_template_kwargs", off}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::string prompt = r.json()["prompt"];
  EXPECT_NE(prompt.find("<|tool>declaration:get_weather{"), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.ends_with("<|turn>model\n<|channel>thought\n<channel|>")) << prompt;
  json round = ask;
  round.push_back(json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
    "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})"));
  round.push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}});
  r = http_post(server.port(), "/apply-template", {{"messages", round}, {"tools", kTools}});
  ASSERT_EQ(r.status, 200) << r.body;
  prompt = r.json()["prompt"];
  EXPECT_NE(prompt.find("<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_response>response:"
                        "get_weather{value:<|\"|>sunny<|\"|>}<tool_response|>"),
            std::string::npos)
      << prompt;

  // A call in Gemma's syntax after some content, whole and streamed.
  const std::string said = "Let me check.";
  const std::string call = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>";
  const json body = {{"messages", ask},  {"tools", kTools},   {"chat_template_kwargs", off},
                     {"temperature", 0}, {"max_tokens", 200}, {"structured_outputs", exactly(said + call)}};
  r = http_post(server.port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  EXPECT_EQ(choice["message"]["content"], said) << r.body;
  EXPECT_TRUE(choice["message"]["reasoning_content"].is_null()) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  const json& c = choice["message"]["tool_calls"][0];
  EXPECT_EQ(c["type"], "function");
  EXPECT_EQ(c["function"]["name"], "get_weather");
  EXPECT_EQ(c["function"]["arguments"], R"({"city":"Paris","days":2})");

  json streamed = body;
  streamed["stream"] = true;
  r = http_post(server.port(), "/v1/chat/completions", streamed);
  ASSERT_EQ(r.status, 200) << r.body;
  std::string content, name, args, finish;
  for (const std::string& p : sse_payloads(r.body)) {
    if (p == "[DONE]") continue;
    const json ch = json::parse(p)["choices"][0];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) {
        if (t["function"].contains("name")) name += t["function"]["name"].get<std::string>();
        args += t["function"]["arguments"].get<std::string>();
      }
    if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(content, said);
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(args, R"({"city":"Paris","days":2})");
  EXPECT_EQ(finish, "tool_calls");

  // Thinking off: text that looks like a thought is content, as the model wrote it.
  json plain = {{"messages", ask},
                {"chat_template_kwargs", off},
                {"temperature", 0},
                {"max_tokens", 100},
                {"structured_outputs", exactly("<|channel>thought\nx<channel|>Hi")}};
  r = http_post(server.port(), "/v1/chat/completions", plain);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "<|channel>thought\nx<channel|>Hi") << r.body;
  EXPECT_TRUE(r.json()["choices"][0]["message"]["reasoning_content"].is_null()) << r.body;
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::testing
