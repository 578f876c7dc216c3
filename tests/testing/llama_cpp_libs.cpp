#include "testing/llama_cpp_libs.h"

#include <dlfcn.h>

#include <stdexcept>

#include "testing/build_paths.h"

namespace pagoda::testing {

std::filesystem::path llama_cpp_lib_dir() {
  return std::filesystem::path(PAGODA_SOURCE_DIR) / kLlamaCppPrefix / "node_modules" / kLlamaCppPackage / "bins" /
         "linux-x64";
}

SharedLibrary SharedLibrary::open(const std::string& file_name) {
  const std::string path = (llama_cpp_lib_dir() / file_name).string();
  // RTLD_NODELETE: a later dlclose (there is none) could not unload ggml's globals under a caller.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) throw std::runtime_error("cannot load " + path + ": " + ::dlerror());
  return SharedLibrary(handle);
}

void* SharedLibrary::symbol(const char* name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name);
  if (!p) throw std::runtime_error(std::string("llama.cpp library lacks the function ") + name);
  return p;
}

}  // namespace pagoda::testing
