// gpt-oss served end to end: a synthetic gpt-oss (random weights, small,
// byte-level BPE) whose GGUF carries the real gpt-oss chat template
// (tests/chat/templates/openai--gpt-oss-120b.jinja) and harmony's markers as
// control tokens. The server picks the harmony reader from the template by
// itself; it renders the template as @huggingface/jinja does (POST
// /apply-template against tests/chat/oracle's renderer: system and developer
// text, tools as harmony's TypeScript namespace, reasoning_effort, an earlier
// call turn whose reasoning_content becomes the template's `thinking`, a tool
// result); and the official openai client reads reasoning, content and
// tool calls from it, streamed and not (openai_client/harmony.mjs).
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

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fields of gpt-oss the forward pass needs (tests/model/moe_test.cpp's
// gpt_oss_spec), with a byte-level vocabulary and harmony's markers.
SyntheticModelSpec gpt_oss(const std::string& chat_template) {
  SyntheticModelSpec s;
  s.arch = "gpt-oss";
  s.tokenizer = "gpt2";
  s.n_vocab = 400;
  s.n_ctx = 2048;  // the template's system and developer messages alone take ~200 tokens
  s.n_embd = 64;
  s.n_layer = 2;
  s.n_ff = 96;
  s.head_dim = 32;
  s.n_expert = 8;
  s.n_expert_used = 3;
  s.n_ff_expert = 32;
  s.sliding_window = 8;
  s.qkv_bias = s.out_bias = s.expert_bias = true;
  s.tied_embeddings = false;
  s.special_tokens = {"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"};
  s.eos_token = "<|return|>";
  s.chat_template = chat_template;
  return s;
}

TEST(ServerGptOss, HarmonyTemplateReasoningAndToolCalls) {
  const fs::path src = PAGODA_SOURCE_DIR;
  const fs::path client = src / "tests/server/openai_client", jinja = src / "tests/chat/oracle";
  PAGODA_REQUIRE_NPM(client.string(), "openai");
  PAGODA_REQUIRE_NPM(jinja.string(), "@huggingface/jinja");
  const std::string tmpl = read_text(src / "tests/chat/templates/openai--gpt-oss-120b.jinja");
  ASSERT_FALSE(tmpl.empty());

  const fs::path dir = fs::temp_directory_path() / ("pagoda-gpt-oss-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  synthetic_model(gpt_oss(tmpl)).write(model);
  ServerProcess server({"-m", model});
  EXPECT_NE(server.stderr_text().find("tool-call parser: openai (auto: from the chat template)"), std::string::npos)
      << server.stderr_text();

  // What the server sends (OpenAI fields) and the context the template must
  // see for it: reasoning_content as `thinking`, the call turn's content
  // left out, arguments as an object, reasoning_effort as a variable.
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city", "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "description": "Its name"}, "unit": {"type": "string", "enum": ["c", "f"]},
    "days": {"type": "integer"}}, "required": ["city"]}}}])");
  const ojson sent = ojson::parse(R"([
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "reasoning_content": "Need a call.", "tool_calls": [{"id": "call_1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny.", "reasoning_content": "Easy."},
    {"role": "user", "content": "And tomorrow?"}])");
  ojson seen = sent;
  seen[2] = ojson::parse(R"({"role": "assistant", "reasoning_content": "Need a call.", "tool_calls": [{"id":
    "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
    "thinking": "Need a call."})");
  seen[4]["thinking"] = "Easy.";
  struct Case {
    ojson body, context;
  };
  const ojson plain = {{{"role", "user"}, {"content", "Hello"}}};
  // Up to the tool's result: no final answer follows the call, so the
  // template keeps the call turn's analysis.
  const ojson open_call(sent.begin(), sent.begin() + 4), open_seen(seen.begin(), seen.begin() + 4);
  const std::vector<Case> cases = {
      {{{"messages", plain}}, {{"messages", plain}}},
      {{{"messages", open_call}, {"tools", tools}}, {{"messages", open_seen}, {"tools", tools}}},
      {{{"messages", sent}, {"tools", tools}, {"reasoning_effort", "high"}},
       {{"messages", seen}, {"tools", tools}, {"reasoning_effort", "high"}}},
      {{{"messages", sent}, {"tools", tools}, {"chat_template_kwargs", {{"reasoning_effort", "low"}}}},
       {{"messages", seen}, {"tools", tools}, {"reasoning_effort", "low"}}},
  };
  ojson oracle_cases = ojson::array();
  for (const Case& c : cases) {
    ojson ctx = c.context;
    ctx["add_generation_prompt"] = true;
    ctx["bos_token"] = "<|endoftext|>";
    ctx["eos_token"] = "<|return|>";
    if (!ctx.contains("tools")) ctx["tools"] = nullptr;
    oracle_cases.push_back({{"template", tmpl}, {"context", ctx}});
  }
  const fs::path case_file = dir / "cases.json";
  std::ofstream(case_file) << oracle_cases.dump();
  const ProcessResult want = run_process({"/usr/bin/env", "node", (jinja / "render.mjs").string(), case_file.string()});
  ASSERT_EQ(want.exit_code, 0) << want.err;
  const auto rendered = nlohmann::json::parse(want.out);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].body.dump());
    // Sent as text: the client's key order reaches the template (tool schemas' properties).
    const HttpResponse r = http_post_raw(server.port(), "/apply-template", cases[i].body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_TRUE(rendered[i].contains("text")) << rendered[i];
    const std::string prompt = r.json()["prompt"];
    EXPECT_EQ(prompt, rendered[i]["text"]);
    EXPECT_TRUE(prompt.ends_with("<|start|>assistant")) << prompt;
  }
  const std::string open = rendered[1]["text"], answered = rendered[2]["text"];
  EXPECT_NE(open.find("<|channel|>analysis<|message|>Need a call.<|end|>"), std::string::npos) << open;
  EXPECT_NE(open.find("to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>"),
            std::string::npos)
      << open;
  EXPECT_NE(answered.find("Reasoning: high"), std::string::npos) << answered;
  EXPECT_NE(answered.find("type get_weather = (_: {"), std::string::npos) << answered;
  EXPECT_EQ(answered.find("Need a call."), std::string::npos) << answered;  // dropped once a final answer follows
  // A bad reasoning_effort is a 400 naming it.
  const HttpResponse bad =
      http_post(server.port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"reasoning_effort", "max"}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "reasoning_effort") << bad.body;

  const auto p = run_process({"/usr/bin/env", "node", (client / "harmony.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(server.port()) + "/v1"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("harmony checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::testing
