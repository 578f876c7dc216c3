// Split GGUF files (llama.cpp's gguf-split convention): a model stored as
// NAME-00001-of-0000N.gguf ... NAME-0000N-of-0000N.gguf, each a whole GGUF
// file holding some of the tensors. The first carries the model's metadata
// plus split.count, split.no (0-based) and split.tensors.count (all parts);
// the others carry the split.* keys only. GgufFile::open on the first part
// loads every part as one model; these helpers name and recognize the parts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda {

inline constexpr const char* kSplitCount = "split.count";
inline constexpr const char* kSplitNo = "split.no";
inline constexpr const char* kSplitTensorsCount = "split.tensors.count";

struct SplitName {
  std::string prefix;  // everything before "-00001-of-00003.gguf" (may include a directory)
  int no = 0;          // 1-based, as in the name
  int count = 0;
};

// "dir/NAME-00002-of-00003.gguf" -> {"dir/NAME", 2, 3}; nullopt when the name
// does not follow the convention (5 digits each, 1 <= no <= count).
std::optional<SplitName> parse_split_name(std::string_view path);

// The name of part `no` (1-based) of `count`: PREFIX-0000no-of-0000count.gguf.
std::string split_name(const std::string& prefix, int no, int count);

}  // namespace pagoda
