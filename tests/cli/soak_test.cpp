// `pagoda soak` end to end on a small count: every mode's checks hold on a
// healthy server, and a check that cannot hold (an RSS bound of 0 MiB) makes
// it fail, so its checks are real.
#include <gtest/gtest.h>

#include <chrono>

#include "testing/build_paths.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using testing::run_process;

TEST(CliSoak, EveryModeHoldsAndAFailedCheckFails) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  const auto ok = run_process({PAGODA_BINARY, "soak", "-m", model, "-n", "200", "-c", "32"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  for (const char* mode : {"paged", "reserve", "faults", "audit"})
    EXPECT_NE(ok.out.find(std::string(mode) + " "), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("every check held"), std::string::npos) << ok.out;

  const auto bad =
      run_process({PAGODA_BINARY, "soak", "-m", model, "-n", "50", "--modes", "paged", "--max-rss-growth-mib", "0"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("FAILED: RSS grew"), std::string::npos) << bad.out;
}

// A server that exits while loading (a vocabulary-only file has no weights)
// fails the soak at once, with its exit code and log, not after the health wait.
TEST(CliSoak, AServerThatExitsFailsAtOnce) {
  const std::string model = testing::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
  const auto start = std::chrono::steady_clock::now();
  const auto p = run_process({PAGODA_BINARY, "soak", "-m", model, "-n", "10", "--modes", "paged,audit"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(p.out.find("FAILED: pagoda serve exited with code 1"), std::string::npos) << p.out;
  EXPECT_LT(seconds, 30) << "the soak waited for a server that had exited";
}

}  // namespace
}  // namespace pagoda
