// MappedFile: both residencies give the file's exact bytes, and errors name
// the path instead of crashing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/mapped_file.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

// A fresh file of n pseudo-random bytes under the temp folder, removed at the end of the test.
struct TempFile {
  fs::path path;
  std::vector<uint8_t> bytes;
  explicit TempFile(size_t n) {
    path = fs::temp_directory_path() / ("pagoda-mapped-" + std::to_string(::getpid()) + "-" + std::to_string(n));
    bytes.resize(n);
    uint32_t x = 12345;
    for (auto& b : bytes) b = uint8_t((x = x * 1103515245u + 12345u) >> 24);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(n));
  }
  ~TempFile() { fs::remove(path); }
};

TEST(MappedFile, BothResidenciesGiveTheFilesBytes) {
  // 5 MiB and a bit: more than two huge pages, and a size that is not a multiple of one.
  for (const size_t n : {size_t(1), size_t(4096), size_t(5 << 20) + 123}) {
    const TempFile f(n);
    for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
      const MappedFile m(f.path.string(), r);
      ASSERT_EQ(m.size(), n);
      ASSERT_NE(m.data(), nullptr);
      EXPECT_TRUE(std::equal(f.bytes.begin(), f.bytes.end(), m.data())) << n << " bytes, residency " << int(r);
      EXPECT_EQ(m.path(), f.path.string());
      EXPECT_EQ(m.residency(), r);  // a few MiB always fit in memory
    }
  }
}

TEST(MappedFile, AReadReportsItsProgressToTheEnd) {
  const TempFile f(size_t(3 << 20) + 5);
  std::vector<uint64_t> done;
  const LoadProgress progress = [&](const char* stage, uint64_t d, uint64_t total) {
    EXPECT_STREQ(stage, "reading");
    EXPECT_EQ(total, f.bytes.size());
    done.push_back(d);
  };
  const MappedFile m(f.path.string(), Residency::kInMemory, progress);
  ASSERT_FALSE(done.empty());
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_EQ(done.back(), f.bytes.size());
  // A mapping reads nothing at open: nothing to report.
  done.clear();
  const MappedFile mapped(f.path.string(), Residency::kMapped, progress);
  EXPECT_TRUE(done.empty());
}

TEST(MappedFile, EmptyFileHasNoBytes) {
  const TempFile f(0);
  for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
    const MappedFile m(f.path.string(), r);
    EXPECT_EQ(m.size(), 0u);
  }
}

TEST(MappedFile, ErrorsNameThePath) {
  for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
    try {
      MappedFile m("/nonexistent/pagoda/model.gguf", r);
      FAIL() << "opened a missing file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("/nonexistent/pagoda/model.gguf"), std::string::npos) << e.what();
    }
    EXPECT_THROW(MappedFile(fs::temp_directory_path().string(), r), Error);  // a folder
  }
}

}  // namespace
}  // namespace pagoda
