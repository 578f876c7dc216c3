// Splits input text around special tokens before the model's own encoder runs
// (llama.cpp's tokenizer_st_partition): user-defined tokens are always matched
// as a whole; control and unknown tokens (<s>, <|user|>) only when the caller
// asks to parse special text, as chat templates do.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

struct Fragment {
  int32_t token = -1;     // >= 0: this fragment is that special token
  std::string_view text;  // otherwise: raw text to encode (never empty)
};

// Fragments in input order. Views point into `text`.
std::vector<Fragment> split_special(const Vocab& v, std::string_view text, bool parse_special);

}  // namespace pagoda
