// Runs a program to completion and captures what it printed, for tests of
// the `pagoda` binary.
#pragma once

#include <string>
#include <vector>

namespace pagoda::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal if it was killed
  std::string out, err;
};

// Runs argv[0] with the arguments (no shell), waits for it.
ProcessResult run_process(const std::vector<std::string>& argv);

}  // namespace pagoda::testing
