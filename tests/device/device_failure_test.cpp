// The device-failure classification: every code has one answer, and the table
// agrees with the CUDA toolkit's own headers where they are installed (CI has
// nvcc 13): every cudaError_t and cublasStatus_t enumerator is in it with its
// value, and every code the header documents as leaving the process unusable
// is kDeviceLost.
#include "device/device_failure.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace pagoda::device {

// gtest prints a failure's name, not its bytes.
void PrintTo(DeviceFailure f, std::ostream* os) { *os << failure_name(f); }

namespace {

std::string cuda_include_dir() {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) return std::string(v) + "/include";
  return "/usr/local/cuda/include";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The enumerators of `enum ... NAME {...}` in a header: name -> (value, its doc comment).
std::map<std::string, std::pair<int, std::string>> enumerators(const std::string& text, const std::string& name) {
  std::map<std::string, std::pair<int, std::string>> out;
  const size_t begin = text.find(name);
  if (begin == std::string::npos) return out;
  const std::string body = text.substr(begin, text.find('}', begin) - begin);
  const std::regex entry(R"((?:/\*\*((?:[^*]|\*(?!/))*)\*/\s*)?(\w+)\s*=\s*(\d+))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), entry); it != std::sregex_iterator(); ++it)
    out[(*it)[2]] = {std::stoi((*it)[3]), (*it)[1]};
  return out;
}

void expect_sorted_and_unique(std::span<const DeviceErrorCode> table) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_NE(table[i].code, 0) << table[i].name;
    if (i > 0) {
      EXPECT_LT(table[i - 1].code, table[i].code) << table[i].name;
    }
    EXPECT_TRUE(names.insert(table[i].name).second) << table[i].name;
  }
}

TEST(DeviceFailure, TablesAreSortedWithUniqueNames) {
  expect_sorted_and_unique(cuda_error_codes());
  expect_sorted_and_unique(cublas_status_codes());
  EXPECT_GE(cuda_error_codes().size(), 130u);
}

TEST(DeviceFailure, EachKindOfFailureGetsItsReaction) {
  EXPECT_EQ(classify_cuda_error(2), DeviceFailure::kOutOfMemory);     // cudaErrorMemoryAllocation
  EXPECT_EQ(classify_cublas_status(3), DeviceFailure::kOutOfMemory);  // CUBLAS_STATUS_ALLOC_FAILED
  for (int code : {1, 9, 98, 209, 701, 801, 909})                     // bad values, launches, support
    EXPECT_EQ(classify_cuda_error(code), DeviceFailure::kRecoverable) << cuda_error_name(code);
  for (int code : {700, 702, 710, 714, 715, 716, 717, 718, 719, 214, 999})  // sticky, hardware, unknown
    EXPECT_EQ(classify_cuda_error(code), DeviceFailure::kDeviceLost) << cuda_error_name(code);
  // A code this table does not know is never retried.
  EXPECT_EQ(classify_cuda_error(12345), DeviceFailure::kDeviceLost);
  EXPECT_EQ(classify_cublas_status(77), DeviceFailure::kDeviceLost);
  EXPECT_EQ(cuda_error_name(700), "cudaErrorIllegalAddress");
  EXPECT_EQ(cuda_error_name(12345), "cudaError 12345");
  EXPECT_EQ(failure_name(DeviceFailure::kDeviceLost), "device lost");
}

TEST(DeviceFailure, AgreesWithTheInstalledCudaHeaders) {
  const std::filesystem::path dir = cuda_include_dir();
  if (!std::filesystem::exists(dir / "driver_types.h") || !std::filesystem::exists(dir / "cublas_api.h"))
    GTEST_SKIP() << "no CUDA toolkit headers in " << dir << " (set CUDA_HOME)";
  const auto cuda = enumerators(read(dir / "driver_types.h"), "enum __device_builtin__ cudaError");
  ASSERT_GE(cuda.size(), 100u) << "could not read cudaError_t from driver_types.h";
  std::map<std::string_view, int> ours;
  for (const auto& e : cuda_error_codes()) ours[e.name] = e.code;
  int documented_sticky = 0;
  for (const auto& [name, value_doc] : cuda) {
    const auto& [value, doc] = value_doc;
    if (value == 0) continue;  // cudaSuccess
    ASSERT_TRUE(ours.count(name)) << name << " = " << value << " is not classified";
    EXPECT_EQ(ours[name], value) << name;
    // The header's own words for an error that leaves the context unusable.
    const std::string words = std::regex_replace(doc, std::regex(R"([\s*]+)"), " ");
    if (words.find("must be terminated and relaunched") != std::string::npos) {
      ++documented_sticky;
      EXPECT_EQ(classify_cuda_error(value), DeviceFailure::kDeviceLost) << name;
    }
  }
  EXPECT_GE(documented_sticky, 10) << "the header's wording for sticky errors was not found";
  const auto cublas = enumerators(read(dir / "cublas_api.h"), "CUBLAS_STATUS_SUCCESS");
  ASSERT_GE(cublas.size(), 5u);
  std::map<std::string_view, int> ours_cublas;
  for (const auto& e : cublas_status_codes()) ours_cublas[e.name] = e.code;
  for (const auto& [name, value_doc] : cublas) {
    if (value_doc.first == 0) continue;
    ASSERT_TRUE(ours_cublas.count(name)) << name << " is not classified";
    EXPECT_EQ(ours_cublas[name], value_doc.first) << name;
  }
}

}  // namespace
}  // namespace pagoda::device
