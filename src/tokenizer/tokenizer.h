// The tokenizer a model's GGUF file describes: loads the vocabulary, picks the
// encoder for tokenizer.ggml.model ("llama": SentencePiece-style; "gpt2":
// byte-level BPE; "bert": WordPiece), and maps ids back to text. Immutable after loading, so one instance can serve
// many threads; copies share the vocabulary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/vocab.h"

namespace pagoda {

struct BpeModel;

class Tokenizer {
 public:
  // FormatError on missing or inconsistent tokenizer metadata, Unsupported
  // (naming it) for a tokenizer model Pagoda does not implement.
  static Tokenizer from_gguf(const GgufFile& f);

  // Token ids for `text`. add_bos prepends the BOS token (InvalidArgument if
  // the vocabulary has none); for WordPiece it is llama.cpp's add_special:
  // [CLS] first and [SEP] last (InvalidArgument if either is missing). With parse_special, the text of control tokens
  // (<s>, <|user|>) becomes those tokens; without it, only user-defined
  // tokens are matched as a whole. Empty text gives no tokens besides BOS.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const;

  bool add_bos_by_default() const;  // tokenizer.ggml.add_bos_token, and a BOS exists
  // tokenizer.ggml.add_eos_token, and an EOS exists (WordPiece closes with [SEP] instead).
  bool add_eos_by_default() const;
  bool add_sep_by_default() const { return vocab_->add_sep && vocab_->sep >= 0; }  // tokenizer.ggml.add_sep_token
  int32_t bos_id() const { return vocab_->bos; }                                   // -1 if absent
  int32_t eos_id() const { return vocab_->eos; }                                   // -1 if absent
  int32_t sep_id() const { return vocab_->sep; }                                   // -1 if absent
  bool is_end_of_generation(int32_t id) const;
  const std::vector<int32_t>& end_of_generation_ids() const { return vocab_->eog; }  // sorted

  size_t vocab_size() const { return vocab_->size(); }
  std::string model_name() const { return vocab_->model; }  // tokenizer.ggml.model
  // Byte-level BPE: tokens carry their own spaces, there is no dummy prefix.
  bool byte_level() const { return kind_ == Kind::Bpe; }
  int32_t find_token(std::string_view text) const { return vocab_->find(text); }  // -1 if none
  // The longest token text in bytes. No token stands for more input bytes
  // than its text holds, so a text of B bytes encodes to at least
  // B / max_token_bytes() tokens: a length check that needs no encoding.
  // WordPiece drops whitespace and control characters, so no length bounds
  // its input per token: there it is a huge value (and the bound 1 token).
  size_t max_token_bytes() const { return kind_ == Kind::Wpm ? kNoByteBound : max_token_bytes_; }

  // The raw vocabulary entry ("▁the", "<0x0A>", "<s>"), for display and
  // logprobs; InvalidArgument for an id outside the vocabulary.
  std::string token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;  // InvalidArgument outside the vocabulary

  // The bytes a token stands for when rendering output: U+2581 as a space,
  // <0xNN> as that byte (byte-level BPE: each character of the token as the
  // byte it stands for), user-defined tokens as their text, and nothing for
  // control, unknown and unused tokens or ids outside the vocabulary. Bytes
  // may be part of a UTF-8 character; see IncrementalDecoder.
  std::string decode_bytes(int32_t id) const;

  // Whole-sequence decode: for SentencePiece the dummy-prefix space of the
  // first visible token is dropped, so decode(encode(s)) == s (byte-level BPE
  // keeps every byte as it is). WordPiece text is normalized by encoding, and
  // its decode also drops the spaces llama.cpp cleans up (before "." "," and
  // the like), so it reads back the normalized input. Output is valid UTF-8 (invalid bytes become
  // U+FFFD); never throws.
  std::string decode(std::span<const int32_t> ids) const;

  const Vocab& vocab() const { return *vocab_; }

 private:
  enum class Kind { Spm, Bpe, Wpm };
  Tokenizer(Kind kind, std::shared_ptr<const Vocab> vocab, std::shared_ptr<const BpeModel> bpe = nullptr)
      : kind_(kind), vocab_(std::move(vocab)), bpe_(std::move(bpe)) {
    for (const auto& t : vocab_->text) max_token_bytes_ = std::max(max_token_bytes_, t.size());
  }

  Kind kind_;
  std::shared_ptr<const Vocab> vocab_;
  std::shared_ptr<const BpeModel> bpe_;                    // Kind::Bpe only
  static constexpr size_t kNoByteBound = size_t(1) << 40;  // past any request, and no overflow when added to one
  size_t max_token_bytes_ = 1;                             // the longest token text
};

}  // namespace pagoda
