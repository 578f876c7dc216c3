// Tokenizer: model dispatch and the id -> bytes mapping. Encoding specifics
// live in one file per tokenizer model (spm.cpp, bpe.cpp, wpm.cpp).
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/special_split.h"
#include "tokenizer/spm.h"
#include "tokenizer/wpm.h"
#include "util/error.h"

namespace pagoda {

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model == "llama") return Tokenizer(Kind::Spm, std::make_shared<const Vocab>(Vocab::from_gguf(f, spm_defaults())));
  if (model == "gpt2") {
    const PreTokenizer pre = pre_tokenizer_from_name(f.get_string("tokenizer.ggml.pre", ""));
    auto vocab = std::make_shared<const Vocab>(Vocab::from_gguf(f, bpe_defaults(pre)));
    auto bpe = std::make_shared<const BpeModel>(BpeModel::from_gguf(f, *vocab, pre));
    return Tokenizer(Kind::Bpe, std::move(vocab), std::move(bpe));
  }
  if (model == "bert") return Tokenizer(Kind::Wpm, std::make_shared<const Vocab>(Vocab::from_gguf(f, wpm_defaults())));
  fail<Unsupported>("tokenizer model '{}' is not supported (supported: 'llama', 'gpt2', 'bert')", model);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  const Vocab& v = *vocab_;
  std::vector<int32_t> ids;
  if (add_bos) {
    if (v.bos < 0) fail<InvalidArgument>("this vocabulary has no BOS token to add");
    if (kind_ == Kind::Wpm && v.sep < 0) fail<InvalidArgument>("this vocabulary has no SEP token to add");
    ids.push_back(v.bos);
  }
  const std::vector<Fragment> fragments = split_special(v, text, parse_special);
  switch (kind_) {
    case Kind::Spm: spm_encode(v, fragments, ids); break;
    case Kind::Bpe: bpe_encode(v, *bpe_, fragments, ids); break;
    case Kind::Wpm: wpm_encode(v, max_token_bytes_, fragments, ids); break;
  }
  if (add_bos && kind_ == Kind::Wpm) ids.push_back(v.sep);  // BERT's [CLS] ... [SEP]
  return ids;
}

bool Tokenizer::add_bos_by_default() const { return vocab_->add_bos && vocab_->bos >= 0; }
bool Tokenizer::add_eos_by_default() const { return vocab_->add_eos && vocab_->eos >= 0 && kind_ != Kind::Wpm; }

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(vocab_->eog.begin(), vocab_->eog.end(), id);
}

std::string Tokenizer::token_text(int32_t id) const {
  if (!vocab_->valid(id)) fail<InvalidArgument>("token id {} is outside the vocabulary of {}", id, vocab_size());
  return vocab_->text[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (!vocab_->valid(id)) fail<InvalidArgument>("token id {} is outside the vocabulary of {}", id, vocab_size());
  return vocab_->type[id];
}

std::string Tokenizer::decode_bytes(int32_t id) const {
  const Vocab& v = *vocab_;
  if (!v.valid(id)) return {};
  const std::string& text = v.text[id];
  switch (v.type[id]) {
    case TokenType::Normal: {
      if (kind_ == Kind::Bpe) return byte_level_decode(text);
      std::string out;
      out.reserve(text.size());
      for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 3, "\xE2\x96\x81") == 0) {  // U+2581 stands for a space
          out += ' ';
          i += 2;
        } else {
          out += text[i];
        }
      }
      return out;
    }
    case TokenType::Byte: return std::string(1, char(v.byte_value[id]));
    case TokenType::UserDefined: return text;
    default: return {};  // control, unknown, unused, undefined: not rendered
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  IncrementalDecoder d(*this, /*strip_leading_space=*/true);  // a no-op for byte-level BPE
  std::string out;
  for (int32_t id : ids) out += d.push(id);
  out += d.flush();
  return kind_ == Kind::Wpm ? wpm_clean_spaces(out) : out;
}

}  // namespace pagoda
