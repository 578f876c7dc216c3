#include "testing/build_paths.h"
#include "testing/npm_oracle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "testing/process.h"

namespace pagoda::testing {

namespace fs = std::filesystem;

std::string npm_package_missing(const std::string& prefix, const std::string& package) {
  const fs::path root = PAGODA_SOURCE_DIR;
  const fs::path dir = fs::path(prefix).is_absolute() ? fs::path(prefix) : root / prefix;
  const fs::path shown = fs::path(prefix).is_absolute() ? dir.lexically_relative(root) : fs::path(prefix);
  const std::string install = std::string(fs::exists(dir / "package-lock.json") ? "npm ci" : "npm install") +
                              " --prefix " + shown.string() + " (scripts/test.sh does)";
  if (run_process({"/usr/bin/env", "node", "--version"}).exit_code != 0)
    return "Node.js is not installed (`node` is not on PATH): install it, then run " + install;
  if (!fs::exists(dir / "node_modules" / package / "package.json"))
    return "the npm package " + package + " is not installed; run " + install;
  return "";
}

void skip_for_missing_npm(const std::string& why) {
  const char* required = std::getenv("PAGODA_REQUIRE_ORACLES");
  if (required && std::string(required) == "1") {
    ADD_FAILURE() << why;
    return;
  }
  GTEST_SKIP() << why;
}

}  // namespace pagoda::testing
