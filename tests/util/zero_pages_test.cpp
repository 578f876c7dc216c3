#include "util/zero_pages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace pagoda {
namespace {

size_t resident_bytes() {
  size_t pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

TEST(ZeroPages, ReadsZeroAndCostsOnlyWhatIsTouched) {
  const size_t before = resident_bytes();
  ZeroPages<float> big(size_t(256) << 20);  // 1 GiB reserved
  EXPECT_LT(resident_bytes(), before + (64u << 20));
  EXPECT_EQ(big[0], 0.0f);
  EXPECT_EQ(big[big.size() - 1], 0.0f);
  for (size_t i = 0; i < (size_t(4) << 20); ++i) big[i] = 1.0f;  // 16 MiB touched
  const size_t touched = resident_bytes();
  EXPECT_GE(touched, before + (15u << 20));
  EXPECT_LT(touched, before + (96u << 20));
}

TEST(ZeroPages, MovesOwnership) {
  ZeroPages<uint16_t> a(1000);
  a[7] = 42;
  ZeroPages<uint16_t> b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b[7], 42);
  a = std::move(b);
  EXPECT_EQ(a[7], 42);
  EXPECT_TRUE(ZeroPages<float>().empty());
}

}  // namespace
}  // namespace pagoda
