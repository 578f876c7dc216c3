// The `pagoda` binary end to end on the real stories260K model, against
// llama.cpp's reference outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "testing/build_paths.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using testing::run_process;

std::string model() { return testing::shared_path("models/stories260K.gguf"); }

nlohmann::json reference() {
  return nlohmann::json::parse(testing::read_file(testing::shared_path("testdata/reference/stories260K_greedy.json")));
}

TEST(CliGenerate, GreedyMatchesReferenceForEveryPrompt) {
  const auto ref = reference();
  ASSERT_EQ(ref["results"].size(), 3u);
  for (const auto& r : ref["results"]) {
    const auto p = run_process(
        {PAGODA_BINARY, "generate", "-m", model(), "-p", r["prompt"], "-n", "64", "--temperature", "0", "--json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const auto j = nlohmann::json::parse(p.out);
    EXPECT_EQ(j["prompt_token_ids"], r["prompt_token_ids"]);
    EXPECT_TRUE(j["output_token_ids"] == r["output_token_ids_kv_f32"] || j["output_token_ids"] == r["output_token_ids"])
        << r["prompt"] << ": " << j["output_token_ids"].dump();
    if (r["prompt"] == "Once upon a time") {
      EXPECT_EQ(j["text"].get<std::string>().rfind(", there was a little girl named Lily.", 0), 0u) << j["text"];
      EXPECT_EQ(j["text"], r["output_text"]);
    }
  }
}

// The reference's log-probabilities come from llama.cpp's default F16 KV cache,
// so they are compared with Pagoda's F16 cache (F32 differs by up to ~4e-3).
TEST(CliGenerate, FirstPositionLogprobsMatchReference) {
  const auto ref = reference();
  const auto& r = ref["results"][0];
  for (const char* kv : {"f16", "f32"}) {
    const auto p = run_process({PAGODA_BINARY, "generate", "-m", model(), "-p", r["prompt"], "-n", "3", "--temperature",
                                "0", "--json", "--logprobs", "10", "--kv-type", kv});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const auto j = nlohmann::json::parse(p.out);
    ASSERT_EQ(j["top_logprobs"].size(), 3u);
    const auto& first = j["top_logprobs"][0];
    const auto& want = r["first_position_top10"];
    ASSERT_EQ(first.size(), 10u);
    const double tol = std::string(kv) == "f16" ? 1e-3 : 5e-3;
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(first[i]["id"], want[i]["id"]) << i;
      EXPECT_EQ(first[i]["token"], want[i]["token"]) << i;
      EXPECT_NEAR(first[i]["logprob"].get<double>(), want[i]["logprob"].get<double>(), tol) << kv << " " << i;
    }
  }
}

TEST(CliGenerate, SameSeedSameText) {
  auto gen = [](const char* seed) {
    return run_process({PAGODA_BINARY, "generate", "-m", model(), "-p", "The cat", "-n", "40", "--seed", seed,
                        "--temperature", "1.0", "--json"});
  };
  const auto a = gen("5"), b = gen("5"), c = gen("6");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(nlohmann::json::parse(a.out)["output_token_ids"], nlohmann::json::parse(c.out)["output_token_ids"]);
}

// --mmap maps the file instead of reading it into memory: the same model, so
// the same tokens and log-probabilities to the last bit.
TEST(CliGenerate, MappedAndInMemoryWeightsGiveTheSameOutput) {
  auto gen = [](bool mmap) {
    std::vector<std::string> args = {PAGODA_BINARY,      "generate", "-m",    model(),         "-p",
                                     "Once upon a time", "-n",       "48",    "--temperature", "0",
                                     "--logprobs",       "3",        "--json"};
    if (mmap) args.push_back("--mmap");
    return run_process(args);
  };
  const auto in_memory = gen(false), mapped = gen(true);
  ASSERT_EQ(in_memory.exit_code, 0) << in_memory.err;
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_EQ(nlohmann::json::parse(in_memory.out), nlohmann::json::parse(mapped.out));
}

TEST(CliGenerate, StreamsTextAndHonoursStopStrings) {
  const auto p = run_process({PAGODA_BINARY, "generate", "-m", model(), "-p", "Once upon a time", "-n", "64",
                              "--temperature", "0", "--stop", "Lily"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, ", there was a little girl named \n");
}

TEST(CliTokenize, PrintsPromptIds) {
  auto p = run_process({PAGODA_BINARY, "tokenize", "-m", model(), "Once upon a time"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "1 403 407 261 378\n");
  p = run_process({PAGODA_BINARY, "tokenize", "-m", model(), "--no-bos", "Once upon a time"});
  EXPECT_EQ(p.out, "403 407 261 378\n");
}

TEST(CliInfo, DescribesTheModel) {
  const auto p = run_process({PAGODA_BINARY, "info", "-m", model()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("architecture:    llama"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("heads:           8 query, 4 key/value, head size 8"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("F32 x48"), std::string::npos) << p.out;
}

TEST(CliErrors, OneLineErrorAndNonZeroExit) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"generate", "-m", "/no/such/model.gguf", "-p", "x"}, "cannot open /no/such/model.gguf"},
      {{"generate", "-m", "/etc/hostname", "-p", "x"}, "not a GGUF file"},
      {{"generate", "-m", model(), "-p", "x", "--temperature", "-1"}, "temperature"},
      {{"generate", "-m", model(), "-p", "x", "--top-p", "0"}, "top_p"},
      {{"generate", "-m", model(), "-p", "x", "--kv-type", "q4"}, "KV cache type"},
      {{"generate", "-m", model(), "-p", "x", "--no-such-flag"}, "no-such-flag"},
      {{"info", "-m", "/no/such/model.gguf"}, "cannot open"},
      {{"tokenize", "-m", "/no/such/model.gguf", "x"}, "cannot open"},
      {{"frobnicate"}, "subcommand"},
      {{"serve", "-m", model(), "--api-key", ""}, "--api-key is empty"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {PAGODA_BINARY};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto p = run_process(argv);
    EXPECT_NE(p.exit_code, 0) << c.args[0];
    EXPECT_LT(p.exit_code, 128) << "crashed: " << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << p.err;
  }
}

TEST(CliHelp, EveryCommandHasHelp) {
  for (std::string cmd : {"generate", "tokenize", "info"}) {
    const auto p = run_process({PAGODA_BINARY, cmd, "--help"});
    EXPECT_EQ(p.exit_code, 0) << cmd;
    EXPECT_NE(p.out.find("--model"), std::string::npos) << cmd << ": " << p.out;
  }
  EXPECT_EQ(run_process({PAGODA_BINARY, "--help"}).exit_code, 0);
}

}  // namespace
}  // namespace pagoda
