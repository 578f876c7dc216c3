// The architecture never depends on the tokenizer type: `pagoda generate`
// and `pagoda info` on synthetic qwen2 and llama files written with either
// tokenizer ("llama" SentencePiece-style, "gpt2" byte-level BPE).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/build_paths.h"
#include "model/config.h"
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
    synthetic_model(s).write(path);
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

// `pagoda info` describes a file Pagoda cannot run, then says why on stderr
// and exits 1: an architecture it does not know, a tensor type it cannot read.
TEST_F(CliArchitecture, InfoSaysWhatIsNotSupported) {
  SyntheticModelSpec s;
  s.arch = "llama";
  GgufWriter w = synthetic_model(s);
  w.set("general.architecture", Value::string("frobnik"));
  const std::string arch = (dir_ / "frobnik.gguf").string();
  w.write(arch);
  auto p = testing::run_process({PAGODA_BINARY, "info", "-m", arch});
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(p.out.find("architecture:    frobnik"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("architecture 'frobnik' is not supported (supported: " + supported_architectures() + ")"),
            std::string::npos)
      << p.err;

  GgufWriter q = synthetic_model(s);
  q.add_tensor("extra.weight", TensorType::Q4_1, {32}, std::vector<uint8_t>(20));  // one Q4_1 block
  const std::string type = (dir_ / "q4_1.gguf").string();
  q.write(type);
  p = testing::run_process({PAGODA_BINARY, "info", "-m", type});
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(p.out.find("Q4_1 x1"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("tensor types Q4_1 are not supported (supported: F32, F16, "), std::string::npos) << p.err;
}

}  // namespace
}  // namespace pagoda
