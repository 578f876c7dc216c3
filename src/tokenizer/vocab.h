// The tokenizer vocabulary as read from GGUF metadata (tokenizer.ggml.*):
// token texts, scores and types, the text -> id index, the special ids and
// flags, and the derived tables the encoders and the decoder need. It is the
// same for every tokenizer model; only the defaults differ per model.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/file.h"

namespace pagoda {

// tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*).
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,      // <s>, </s>, <|end|>: never produced from plain text, not rendered
  UserDefined = 4,  // always matched as a whole in the input, rendered as its text
  Unused = 5,
  Byte = 6,  // <0xNN>: the byte fallback
};

// Per-model defaults for what the metadata may leave out.
struct VocabDefaults {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t sep = -1;
  bool add_bos = false;
  bool add_sep = false;  // WordPiece: [SEP] closes the input
  bool add_space_prefix = false;
  bool needs_scores = false;  // SentencePiece merges are driven by the scores
};

struct Vocab {
  // Whitespace beside a special token that the splitter drops (llama.cpp's
  // LSTRIP/RSTRIP attributes).
  static constexpr uint8_t kStripLeft = 1;
  static constexpr uint8_t kStripRight = 2;

  std::string model;  // tokenizer.ggml.model
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  std::vector<uint8_t> strip;  // kStripLeft | kStripRight per token

  int32_t bos = -1, eos = -1, unk = -1, sep = -1, eot = -1, eom = -1;  // -1: absent
  bool add_bos = false;
  bool add_sep = false;
  bool add_eos = false;  // tokenizer.ggml.add_eos_token: inputs end with EOS (Qwen3-Embedding's last-token pooling)
  bool add_space_prefix = false;
  // BERT normalizer options (tokenizer.ggml.normalizer.*), used by WordPiece:
  // lowercase defaults to on, strip_accents to whatever lowercase is.
  bool lowercase = true;
  bool strip_accents = true;

  std::array<int32_t, 256> byte_token{};  // id of the <0xNN> token per byte, -1 if none
  std::vector<int16_t> byte_value;        // per token: the byte a Byte token stands for, else -1
  std::vector<int32_t> specials;          // control, user-defined and unknown tokens, longest text first
  std::vector<int32_t> eog;               // end-of-generation ids, sorted

  size_t size() const { return text.size(); }
  bool valid(int32_t id) const { return id >= 0 && size_t(id) < text.size(); }
  int32_t find(std::string_view s) const;  // -1 if no token has this text

  // Reads the vocabulary; FormatError on missing or inconsistent metadata.
  static Vocab from_gguf(const GgufFile& f, const VocabDefaults& defaults);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> index_;
};

}  // namespace pagoda
