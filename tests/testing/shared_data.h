// Where tests find the read-only shared files (models, tokenizer vectors,
// reference outputs): $PAGODA_SHARED, default ../shared from the source tree.
#pragma once

#include <string>

namespace pagoda::testing {

std::string shared_dir();
std::string shared_path(const std::string& relative);  // throws if the file is missing
std::string read_file(const std::string& path);

}  // namespace pagoda::testing
