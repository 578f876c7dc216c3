// llama.cpp v0.5.0 as a test oracle: its prebuilt CPU libraries come from the
// npm package @node-llama-cpp/linux-x64@3.22.1, installed under
// tests/testing/llama_cpp by scripts/test.sh, and are loaded with dlopen (never
// linked, never committed). Tests start with
//   PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
// then open what they need: SharedLibrary::open("libggml-base.so").
#pragma once

#include <filesystem>
#include <string>

namespace pagoda::testing {

inline constexpr const char* kLlamaCppPrefix = "tests/testing/llama_cpp";
inline constexpr const char* kLlamaCppPackage = "@node-llama-cpp/linux-x64";

// The folder holding libllama.v0.5.0.so, libggml-base.so, libggml-cpu-*.so.
std::filesystem::path llama_cpp_lib_dir();

// A library of that folder, loaded once per process and kept loaded (ggml
// keeps process-wide state that must outlive every caller).
class SharedLibrary {
 public:
  // Throws std::runtime_error naming the file and dlerror()'s reason.
  static SharedLibrary open(const std::string& file_name);

  // The exported function `name` as a pointer of type Fn; throws when absent.
  template <class Fn>
  Fn* function(const char* name) const {
    return reinterpret_cast<Fn*>(symbol(name));
  }

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* symbol(const char* name) const;
  void* handle_;
};

}  // namespace pagoda::testing
