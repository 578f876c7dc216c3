// Byte-level BPE ("gpt2" tokenizer model: GPT-2, Llama 3, Qwen2): text is cut
// by the pre-tokenizer, each piece is written in the byte-level alphabet, and
// adjacent symbols are merged by the rank of their pair in
// tokenizer.ggml.merges (lowest rank first, ties leftmost), as llama.cpp and
// Hugging Face tokenizers do.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/special_split.h"
#include "tokenizer/vocab.h"

namespace pagoda {

// What a byte-level BPE vocabulary adds to the Vocab: the split, the merges
// and the token for each single byte. Immutable after loading.
struct BpeModel {
  struct Merge {
    int32_t rank;    // position in tokenizer.ggml.merges
    int32_t result;  // the token the pair becomes
  };

  PreTokenizer pre = PreTokenizer::Default;
  // Llama 3: a piece that is a whole vocabulary token is taken as it is,
  // without running the merges (Hugging Face's ignore_merges).
  bool ignore_merges = false;
  std::array<int32_t, 256> byte_token{};       // the token for each byte alone, -1 if none
  std::unordered_map<uint64_t, Merge> merges;  // key: left id << 32 | right id

  const Merge* find_merge(int32_t left, int32_t right) const {
    const auto it = merges.find(uint64_t(uint32_t(left)) << 32 | uint32_t(right));
    return it == merges.end() ? nullptr : &it->second;
  }

  // Reads tokenizer.ggml.merges (required) for the loaded vocabulary. Merges
  // that name a text no token has can never apply and are left out.
  static BpeModel from_gguf(const GgufFile& f, const Vocab& v, PreTokenizer pre);
};

// The defaults llama.cpp assumes for a byte-level BPE vocabulary, except that
// a missing BOS/EOS id means none (llama.cpp's default of 11 is GPT-2's ",").
// Llama 3 adds BOS unless the file says otherwise.
VocabDefaults bpe_defaults(PreTokenizer pre);

// Appends the ids of already-split input: special fragments as they are, raw
// text pre-tokenized and merged piece by piece.
void bpe_encode(const Vocab& v, const BpeModel& m, std::span<const Fragment> fragments, std::vector<int32_t>& out);

// Appends the ids of one pre-tokenized piece (raw bytes). Exposed for tests.
void bpe_encode_piece(const Vocab& v, const BpeModel& m, std::string_view piece, std::vector<int32_t>& out);

}  // namespace pagoda
