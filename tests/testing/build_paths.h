// Paths the build knows: the source tree and the `pagoda` binary built from it.
// They are compiled into build_paths.cpp alone, not into each test file's
// command line, so a test file compiles to the same object in every clone of
// the repository and ccache serves it to all of them. For the same reason tests
// find files of the source tree through source_dir(), never through __FILE__:
// an object from the cache would carry the path of the clone that compiled it.
#pragma once

namespace pagoda::testing {

const char* source_dir();           // the repository root this build was configured from
const char* built_pagoda_binary();  // the `pagoda` binary of this build

}  // namespace pagoda::testing

#define PAGODA_SOURCE_DIR (::pagoda::testing::source_dir())
#define PAGODA_BINARY (::pagoda::testing::built_pagoda_binary())
