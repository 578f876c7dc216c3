// --max-step-ms takes milliseconds >= 0, "auto" or a multiple ("2.5x"): anything else is a
// one-line error before any model is loaded.
#include <gtest/gtest.h>

#include <algorithm>

#include "testing/build_paths.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using testing::run_process;

TEST(CliStepBudget, BadMaxStepMsIsAOneLineError) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  for (const std::string cmd : {"serve", "bench"}) {
    for (const std::string bad : {"-5", "abc", "12ms", "nan", "", "0x", "-2x", "x", "2xx"}) {
      std::vector<std::string> argv = {PAGODA_BINARY, cmd, "-m", model, "--max-step-ms", bad};
      if (cmd == "serve") argv.insert(argv.end(), {"--port", "0"});
      const auto p = run_process(argv);
      EXPECT_NE(p.exit_code, 0) << cmd << " " << bad;
      EXPECT_LT(p.exit_code, 128) << "crashed: " << p.err;
      EXPECT_NE(p.err.find("--max-step-ms must be"), std::string::npos) << cmd << " '" << bad << "': " << p.err;
      EXPECT_LE(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
  }
}

}  // namespace
}  // namespace pagoda
