// Builds small in-memory GGUF vocabularies for tokenizer tests: hand-made
// merge tables and deliberately malformed metadata.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace pagoda::testing {

struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // empty: no token_type key
  std::vector<std::pair<std::string, Value>> extra;
  std::string model = "llama";

  // The GGUF bytes; parse them with GgufFile::parse while they are alive.
  std::vector<uint8_t> bytes() const {
    GgufWriter w;
    if (!model.empty()) w.set("tokenizer.ggml.model", Value::string(model));
    if (!tokens.empty()) w.set("tokenizer.ggml.tokens", Value::strings(tokens));
    if (!scores.empty()) w.set("tokenizer.ggml.scores", Value::f32s(scores));
    if (!types.empty()) w.set("tokenizer.ggml.token_type", Value::i32s(types));
    for (const auto& [k, v] : extra) w.set(k, v);
    return w.to_bytes();
  }
};

// <unk>, <s>, </s>, then the 256 byte tokens: a base to add pieces to.
inline SyntheticVocab spm_base() {
  SyntheticVocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    v.tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    v.types.push_back(6);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  return v;
}

inline int32_t add_piece(SyntheticVocab& v, std::string text, float score, int32_t type = 1) {
  v.tokens.push_back(std::move(text));
  v.scores.push_back(score);
  v.types.push_back(type);
  return int32_t(v.tokens.size() - 1);
}

}  // namespace pagoda::testing
