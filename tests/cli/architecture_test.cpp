// The architecture never depends on the tokenizer type: `pagoda generate`
// and `pagoda info` on synthetic qwen2 and llama files written with either
// tokenizer ("llama" SentencePiece-style, "gpt2" byte-level BPE).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tools/synthetic.h"
#include "testing/process.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class CliArchitecture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pagoda-arch-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& arch, const std::string& tokenizer) {
    SyntheticModelSpec s;
    s.arch = arch;
    s.qkv_bias = arch == "qwen2";
    s.tokenizer = tokenizer;
    const std::string path = (dir_ / (arch + "-" + tokenizer + ".gguf")).string();
    synthetic_llama(s).write(path);
    return path;
  }

  fs::path dir_;
};

TEST_F(CliArchitecture, EveryArchitectureRunsWithEveryTokenizer) {
  for (const std::string arch : {"llama", "qwen2"}) {
    for (const std::string tokenizer : {"llama", "gpt2"}) {
      const std::string model = write(arch, tokenizer), what = arch + " with " + tokenizer;
      const auto p = testing::run_process({PAGODA_BINARY, "generate", "-m", model, "-p", "the quick brown fox", "-n",
                                           "8", "--temperature", "0", "--ignore-eos", "--json"});
      ASSERT_EQ(p.exit_code, 0) << what << ": " << p.err;
      const auto j = nlohmann::json::parse(p.out);
      EXPECT_GE(j["prompt_token_ids"].size(), 4u) << what;
      EXPECT_EQ(j["output_token_ids"].size(), 8u) << what;
      EXPECT_EQ(j["finish_reason"], "length") << what;

      const auto info = testing::run_process({PAGODA_BINARY, "info", "-m", model});
      ASSERT_EQ(info.exit_code, 0) << what << ": " << info.err;
      EXPECT_NE(info.out.find("architecture:    " + arch + " "), std::string::npos) << info.out;
      EXPECT_NE(info.out.find("tokenizer:       " + tokenizer + ","), std::string::npos) << info.out;
    }
  }
}

}  // namespace
}  // namespace pagoda
