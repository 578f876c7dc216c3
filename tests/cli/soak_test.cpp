// `pagoda soak` end to end on a small count: every mode's checks hold on a
// healthy server, and a check that cannot hold (an RSS bound of 0 MiB) makes
// it fail, so its checks are real.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pagoda
