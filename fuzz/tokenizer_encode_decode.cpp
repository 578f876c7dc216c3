// libFuzzer target for the tokenizers (SentencePiece-style and byte-level
// BPE, real vocabularies from $PAGODA_SHARED/testdata/tokenizer; WordPiece, a
// small BERT vocabulary built here): any bytes encode to ids inside the
// vocabulary, any ids (valid or not) decode to valid UTF-8, neither throws,
// and a valid UTF-8 text of ordinary tokens decodes back to itself (WordPiece
// normalizes text, so there its decoded text encodes back to the same ids). The first byte picks the vocabulary and
// whether special tokens are parsed; with its high bit set, the rest is read as ids to decode, incrementally too
// (IncrementalDecoder, whose output joined with its flush must be valid UTF-8 and equal the bytes the ids stand for
// when those are valid UTF-8).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::fuzz::check;

std::vector<std::unique_ptr<pagoda::Tokenizer>> tokenizers;

// BERT's layout as llama.cpp's converter writes it: [PAD] 0, [UNK] 100,
// [CLS] 101, [SEP] 102, [MASK] 103, word starts prefixed with U+2581,
// "##" continuations bare.
pagoda::Tokenizer bert_tokenizer() {
  std::vector<std::string> tokens = {"[PAD]"};
  std::vector<int32_t> types = {3};
  auto add = [&](std::string t, int32_t type) {
    tokens.push_back(std::move(t));
    types.push_back(type);
  };
  for (int i = 1; i < 100; ++i) add("\xE2\x96\x81[unused" + std::to_string(i) + "]", 1);
  for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) add(s, 3);
  for (char c : std::string("abcdefghijklmnopqrstuvwxyz0123456789.,!?'-()[]$#"))
    add("\xE2\x96\x81" + std::string(1, c), 1);
  for (char c : std::string("abcdefghijklmnopqrstuvwxyz0123456789")) add(std::string(1, c), 1);
  for (const char* s : {"\xE2\x96\x81hello", "\xE2\x96\x81world", "\xE2\x96\x81play", "ing", "ed",
                        "\xE2\x96\x81\xE4\xB8\xAD", "\xE2\x96\x81\xE6\x96\x87", "\xC3\xA9"})
    add(s, 1);
  pagoda::GgufWriter w;
  w.set("tokenizer.ggml.model", pagoda::Value::string("bert"));
  w.set("tokenizer.ggml.tokens", pagoda::Value::strings(tokens));
  w.set("tokenizer.ggml.token_type", pagoda::Value::i32s(types));
  const std::vector<uint8_t> bytes = w.to_bytes();
  return pagoda::Tokenizer::from_gguf(pagoda::GgufFile::parse(bytes.data(), bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-phi-3.gguf"}) {
    const auto file = pagoda::GgufFile::open(pagoda::fuzz::shared_path(std::string("testdata/tokenizer/") + name));
    tokenizers.push_back(std::make_unique<pagoda::Tokenizer>(pagoda::Tokenizer::from_gguf(file)));
  }
  tokenizers.push_back(std::make_unique<pagoda::Tokenizer>(bert_tokenizer()));  // first byte 3 mod 4
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const pagoda::Tokenizer& tok = *tokenizers[(data[0] & 0x7F) % tokenizers.size()];
  const bool parse_special = data[0] & 0x40;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);

  if (data[0] & 0x80) {
    std::vector<int32_t> ids(rest.size() / 4);
    if (!ids.empty()) std::memcpy(ids.data(), rest.data(), ids.size() * 4);
    for (auto& id : ids)  // mostly inside the vocabulary, some outside
      if (id >= 0 && (id & 0xFF000000) == 0) id %= int32_t(tok.vocab_size() + 8);
    check(pagoda::fuzz::valid_utf8(tok.decode(ids)), "decode gives valid UTF-8");
    pagoda::IncrementalDecoder inc(tok);
    std::string streamed, bytes;
    for (int32_t id : ids) {
      streamed += inc.push(id);
      bytes += tok.decode_bytes(id);
    }
    streamed += inc.flush();
    check(pagoda::fuzz::valid_utf8(streamed), "incremental decode gives valid UTF-8");
    if (pagoda::fuzz::valid_utf8(bytes)) check(streamed == bytes, "incremental decode keeps valid text as it is");
    return 0;
  }

  const std::vector<int32_t> ids = tok.encode(rest, /*add_bos=*/false, parse_special);
  bool plain = true;  // only ordinary and byte tokens (as llama.cpp, SPM adds a space after a special token)
  for (int32_t id : ids) {
    check(id >= 0 && size_t(id) < tok.vocab_size(), "ids inside the vocabulary");
    const auto type = tok.token_type(id);
    plain = plain && (type == pagoda::TokenType::Normal || type == pagoda::TokenType::Byte);
  }
  // SentencePiece writes spaces as U+2581, so a text that holds U+2581 itself comes back with spaces.
  const bool spm_space_symbol = !tok.byte_level() && rest.find("\xE2\x96\x81") != std::string_view::npos;
  if (tok.model_name() == "bert") {
    // Decoding drops only spaces beside punctuation, which never join two words.
    if (plain && !spm_space_symbol) check(tok.encode(tok.decode(ids), false) == ids, "encode(decode(ids)) == ids");
    const std::vector<int32_t> framed = tok.encode(rest, /*add_bos=*/true, parse_special);
    check(framed.size() == ids.size() + 2 && framed.front() == tok.bos_id() && framed.back() == tok.sep_id(),
          "[CLS] ... [SEP] around the same ids");
  } else if (plain && !spm_space_symbol && pagoda::fuzz::valid_utf8(rest)) {
    check(tok.decode(ids) == rest, "decode(encode(text)) == text");
  }
  return 0;
}
