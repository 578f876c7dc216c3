#include "testing/shared_data.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pagoda::testing {

std::string shared_dir() {
  if (const char* env = std::getenv("PAGODA_SHARED"); env && *env) return env;
  return PAGODA_SHARED_DEFAULT;
}

std::string shared_path(const std::string& relative) {
  const std::string p = shared_dir() + "/" + relative;
  if (!std::filesystem::exists(p)) throw std::runtime_error("shared test file missing: " + p + " (set PAGODA_SHARED)");
  return p;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace pagoda::testing
