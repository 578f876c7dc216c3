// The `pagoda` binary with hub models: generate from hf:// equals the local
// file, pull -hf ORG/REPO:QUANT, --offline and HF_HUB_OFFLINE, one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/build_paths.h"
#include "hub/hub_fixture.h"
#include "testing/process.h"

namespace pagoda::testing {
namespace {

nlohmann::json generate(const std::vector<std::string>& model_args) {
  std::vector<std::string> argv = {PAGODA_BINARY,   "generate", "-p",    "Once upon a time", "-n", "24",
                                   "--temperature", "0",        "--json"};
  argv.insert(argv.end(), model_args.begin(), model_args.end());
  const auto p = run_process(argv);
  EXPECT_EQ(p.exit_code, 0) << p.err;
  return p.exit_code == 0 ? nlohmann::json::parse(p.out) : nlohmann::json();
}

TEST_F(HubTest, GenerateFromTheHubEqualsTheLocalFile) {
  hub->repos["org/stories"].files = {{"stories260K.gguf", stories()}};
  const auto local = generate({"-m", shared_path("models/stories260K.gguf")});
  const auto pulled = generate({"-m", "hf://org/stories/stories260K.gguf", "--hf-endpoint", hub->url()});
  ASSERT_FALSE(local.is_null());
  EXPECT_EQ(pulled["output_token_ids"], local["output_token_ids"]);
  EXPECT_EQ(pulled["text"], local["text"]);
  EXPECT_FALSE(local["output_token_ids"].empty());
  // Warm and offline with no server: the same, from HF_HUB_OFFLINE=1 or --offline.
  hub.reset();
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(generate({"-m", "hf://org/stories/stories260K.gguf"})["output_token_ids"], local["output_token_ids"]);
  ::unsetenv("HF_HUB_OFFLINE");
  EXPECT_EQ(generate({"-hf", "org/stories", "--offline"})["output_token_ids"], local["output_token_ids"]);
}

TEST_F(HubTest, PullPicksTheQuantAndPrintsWhereItIs) {
  hub->repos["org/multi"].files = {{"m-Q4_K_M.gguf", tagged_gguf("Q4_K_M")}, {"m-Q8_0.gguf", tagged_gguf("Q8_0")}};
  ::setenv("HF_ENDPOINT", hub->url().c_str(), 1);
  const auto p = run_process({PAGODA_BINARY, "pull", "-hf", "org/multi:Q8_0"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string want = (cache / "hub/org--multi" / hub->repos["org/multi"].sha / "m-Q8_0.gguf").string();
  EXPECT_EQ(p.out, want + "\n");
  const auto info = run_process({PAGODA_BINARY, "info", "-m", "hf://org/multi/m-Q8_0.gguf", "--offline", "--metadata"});
  // The file is read from the cache (its metadata listed), then refused: it is no model.
  EXPECT_EQ(info.exit_code, 1) << info.err;
  EXPECT_NE(info.out.find("test.which = \"Q8_0\""), std::string::npos) << info.out;
  EXPECT_NE(info.err.find("cannot run this file"), std::string::npos) << info.err;
}

TEST_F(HubTest, CliErrorsAreOneLineAndSayWhatToDo) {
  hub->repos["org/gated"].files = {{"m.gguf", tagged_gguf("m")}};
  hub->repos["org/gated"].gated = true;
  const std::string endpoint = hub->url();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"pull", "hf://org/gated/m.gguf", "--hf-endpoint", endpoint}, "HF_TOKEN"},
      {{"pull", "hf://org/gated/x.gguf", "--hf-endpoint", endpoint}, "m.gguf"},
      {{"pull", "-hf", "org/empty", "--offline"}, "not in the cache"},
      {{"info", "-m", "hf://org/../x.gguf"}, "not a hub repository"},
      {{"tokenize", "-hf", "org/gated", "-m", "x.gguf", "hi"}, "not both"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {PAGODA_BINARY};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto p = run_process(argv);
    EXPECT_EQ(p.exit_code, 1) << c.args[1] << ": " << p.err;
    EXPECT_EQ(p.err.rfind("error: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find(c.says), std::string::npos) << p.err;
  }
  hub.reset();  // nothing listens there now
  const auto down = run_process({PAGODA_BINARY, "pull", "hf://org/gated/m.gguf", "--hf-endpoint", endpoint});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("cannot reach " + endpoint), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("--offline"), std::string::npos) << down.err;
}

}  // namespace
}  // namespace pagoda::testing
