// cuBLAS is opened at run time, not linked (cuda/cublas_library.h): on any
// machine that built the backend, it opens and has every entry the backend
// calls, with no device needed; and the binaries map none of it at start.
#include "cuda/cublas_library.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace pagoda::cuda {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  return text.find("libcublas") != std::string::npos;
}

// Read before main, so before any test could open it.
const bool cublas_mapped_at_start = cublas_mapped();

TEST(CublasLibrary, OpensWithEveryEntryTheBackendCalls) {
  EXPECT_FALSE(cublas_mapped_at_start) << "cuBLAS is mapped before anything asked for it";
  const CublasLibrary& lib = cublas_library();
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.destroy, nullptr);
  EXPECT_NE(lib.set_stream, nullptr);
  EXPECT_NE(lib.gemm_ex, nullptr);
  EXPECT_EQ(&cublas_library(), &lib);  // opened once
  EXPECT_TRUE(cublas_mapped());
}

}  // namespace
}  // namespace pagoda::cuda
