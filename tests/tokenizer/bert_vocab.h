// A small BERT WordPiece vocabulary as llama.cpp's converter writes it
// (conversion/bert.py): BERT's layout ([PAD] 0, [unused*], [UNK] 100,
// [CLS] 101, [SEP] 102, [MASK] 103), control tokens as they are, "##x"
// continuation pieces stored bare ("x") and every other piece with the U+2581
// word-start prefix ("▁x"). For the WordPiece tests and the llama.cpp oracle.
#pragma once

#include <cctype>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tokenizer/synthetic_vocab.h"

namespace pagoda::testing {

struct BertVocabOptions {
  bool cased = false;         // bert-base-cased: normalizer.lowercase = false, upper-case pieces too
  bool keep_accents = false;  // normalizer.strip_accents = false (lowercase on, accents kept)
};

// The pieces in BERT's own spelling ("##ing"), before conversion.
inline std::vector<std::string> bert_pieces(bool cased) {
  std::vector<std::string> p = {"[PAD]"};
  for (int i = 1; i < 100; ++i) p.push_back("[unused" + std::to_string(i - 1) + "]");
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) p.push_back(s);
  const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789.,!?'\"-()[]:;/&$%#*+<=>@^_`{|}~";
  std::string all = chars;
  if (cased) all += "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (char c : all) p.push_back(std::string(1, c));
  for (char c : all)
    if (std::isalnum(static_cast<unsigned char>(c))) p.push_back(std::string("##") + c);
  for (const char* s :
       {"the",   "hello", "world", "play",  "##ing",  "##ed",     "un", "##aff", "##able", "token",   "##izer",
        "##ize", "cafe",  "uber",  "naive", "resume", "angstrom", "an", "embed", "##ding", "##dings", "中",
        "文",    "日",    "本",    "语",    "é",      "##é",      "ü",  "##ü",   "å",      "##å"})
    p.push_back(s);
  if (cased)
    for (const char* s : {"Hello", "World", "Café", "The", "É", "##É", "Ü"}) p.push_back(s);
  return p;
}

inline SyntheticVocab bert_vocab(const BertVocabOptions& o = {}) {
  SyntheticVocab v;
  v.model = "bert";
  for (const std::string& p : bert_pieces(o.cased)) {
    const bool control = p == "[PAD]" || p == "[UNK]" || p == "[CLS]" || p == "[SEP]" || p == "[MASK]";
    if (control)
      v.tokens.push_back(p);
    else if (p.rfind("##", 0) == 0)
      v.tokens.push_back(p.substr(2));
    else
      v.tokens.push_back("\xE2\x96\x81" + p);
    v.types.push_back(control ? 3 : 1);
  }
  // The special ids gguf-py's SpecialVocab writes for BERT; no BOS key, so the
  // [CLS] of llama.cpp's default 101 is the BOS.
  v.extra.emplace_back("tokenizer.ggml.unknown_token_id", Value::u32(100));
  v.extra.emplace_back("tokenizer.ggml.seperator_token_id", Value::u32(102));
  v.extra.emplace_back("tokenizer.ggml.padding_token_id", Value::u32(0));
  v.extra.emplace_back("tokenizer.ggml.mask_token_id", Value::u32(103));
  if (o.cased) v.extra.emplace_back("tokenizer.ggml.normalizer.lowercase", Value::boolean(false));
  if (o.keep_accents) v.extra.emplace_back("tokenizer.ggml.normalizer.strip_accents", Value::boolean(false));
  // llama.cpp loads a vocabulary only for a known architecture; nothing else
  // of BERT's hyper-parameters is needed for a vocab-only load.
  v.extra.emplace_back("general.architecture", Value::string("bert"));
  return v;
}

}  // namespace pagoda::testing
