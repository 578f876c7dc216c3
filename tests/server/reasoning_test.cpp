// A <think> reasoning model served end to end: a synthetic model (random
// weights, byte-level BPE) whose GGUF carries the real Qwen3.5 chat template
// (tests/chat/templates/Qwen--Qwen3.5-4B.jinja: the generation prompt opens
// "<think>\n", or closes it at once for enable_thinking false) with its
// markers as control tokens. The server picks the qwen3 reasoning parser from
// the template by itself; the template gets an earlier turn's
// reasoning_content and chat_template_kwargs; and the official openai client
// reads reasoning and content apart, streamed and not, with structured
// outputs and a forced tool call that start after the reasoning
// (openai_client/reasoning.mjs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/file.h"
#include "server/http_client.h"
#include "server/server_process.h"
#include "testing/build_paths.h"
#include "testing/npm_oracle.h"
#include "testing/process.h"
#include "tokenizer/tokenizer.h"
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

SyntheticModelSpec thinker(const std::string& chat_template) {
  SyntheticModelSpec s;
  s.arch = "llama";
  s.tokenizer = "gpt2";
  s.n_vocab = 400;
  s.n_ctx = 2048;
  s.special_tokens = {"<|im_start|>", "<|im_end|>", "<think>", "</think>"};
  s.eos_token = "<|im_end|>";
  s.chat_template = chat_template;
  return s;
}

std::string apply(const ServerProcess& server, const ojson& body) {
  const HttpResponse r = http_post_raw(server.port(), "/apply-template", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json()["prompt"].get<std::string>() : "";
}

TEST(ServerReasoning, ThinkTagsSplitIntoReasoningAndContent) {
  const fs::path src = PAGODA_SOURCE_DIR;
  const fs::path client = src / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(client.string(), "openai");
  const std::string tmpl = read_text(src / "tests/chat/templates/Qwen--Qwen3.5-4B.jinja");
  ASSERT_FALSE(tmpl.empty());

  const fs::path dir = fs::temp_directory_path() / ("pagoda-reasoning-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  synthetic_model(thinker(tmpl)).write(model);
  const int32_t think_end = Tokenizer::from_gguf(GgufFile::open(model)).find_token("</think>");
  ASSERT_GE(think_end, 0);
  ServerProcess server({"-m", model});
  EXPECT_NE(server.stderr_text().find("reasoning parser: qwen3 (auto: from the chat template)"), std::string::npos)
      << server.stderr_text();

  // The template opens the thinking, or closes it for enable_thinking false.
  const ojson hello = {{{"role", "user"}, {"content", "Hello"}}};
  EXPECT_TRUE(apply(server, {{"messages", hello}}).ends_with("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(apply(server, {{"messages", hello}, {"chat_template_kwargs", {{"enable_thinking", false}}}})
                  .ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  // An earlier turn's reasoning_content reaches the template, which shows it in the turn after the last question.
  const ojson turn = ojson::parse(R"([{"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!", "reasoning_content": "Be kind."}])");
  EXPECT_NE(apply(server, {{"messages", turn}, {"add_generation_prompt", false}})
                .find("<|im_start|>assistant\n<think>\nBe kind.\n</think>\n\nHello!"),
            std::string::npos);

  const auto p = run_process({"/usr/bin/env", "node", (client / "reasoning.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(server.port()) + "/v1", std::to_string(think_end)});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("reasoning checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::testing
