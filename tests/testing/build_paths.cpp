#include "testing/build_paths.h"

namespace pagoda::testing {

// PAGODA_SOURCE_DIR_PATH and PAGODA_BINARY_PATH: definitions of this file alone (CMakeLists.txt).
const char* source_dir() { return PAGODA_SOURCE_DIR_PATH; }
const char* built_pagoda_binary() { return PAGODA_BINARY_PATH; }

}  // namespace pagoda::testing
