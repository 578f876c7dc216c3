// A fresh clone serves at once: with no -m and no shared data folder, from
// any working directory, the binary finds the model the project ships in
// models/; and `pagoda --version` names the version and the git revision.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "testing/build_paths.h"
#include "testing/process.h"

namespace pagoda {
namespace {

using testing::run_process;

TEST(CliDefaultModel, FoundFromAnyFolderWithoutSharedData) {
  const auto p = run_process({"/bin/sh", "-c",
                              std::string("cd / && env -u PAGODA_SHARED ") + PAGODA_BINARY +
                                  " generate -p 'Once upon a time' -n 8 --temperature 0 --json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["output_token_ids"].size(), 8u) << p.out;
  EXPECT_EQ(j["text"].get<std::string>().rfind(", there was a little girl", 0), 0u) << p.out;
}

TEST(CliVersion, NamesVersionAndRevision) {
  const auto p = run_process({PAGODA_BINARY, "--version"});
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_TRUE(std::regex_search(p.out, std::regex(R"(^pagoda \d+\.\d+\.\d+ \(git ([0-9a-f]{12}(-dirty)?|unknown)\))")))
      << p.out;
}

}  // namespace
}  // namespace pagoda
