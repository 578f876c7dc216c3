// Loading and checking tokenizer.ggml.* metadata. Anything a later step would
// index with (array lengths, token types, byte tokens) is validated here, so
// the encoders and the decoder can trust the tables.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "util/error.h"

namespace pagoda {
namespace {

constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";

// "<0xNN>" (upper- or lower-case hex) -> NN, else -1.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// A special-token id from metadata; absent, negative or out-of-range ids keep
// the default (files write 0xFFFFFFFF for "none", llama.cpp ignores bad ids).
int32_t read_id(const GgufFile& f, const std::string& key, int32_t dflt, size_t n) {
  auto in_range = [n](int64_t id) { return id >= 0 && uint64_t(id) < n; };
  if (const Value* v = f.find(key)) {
    const int64_t id = v->as_i64(key);
    if (in_range(id)) return int32_t(id);
  }
  return in_range(dflt) ? dflt : -1;
}

// Texts of end-of-turn markers that stop generation when the vocabulary has
// them as special tokens (the list llama.cpp matches, since GGUF files rarely
// name them in metadata). Qwen's FIM pad/repo/file separators are among them:
// llama.cpp ends generation on its FIM tokens too.
constexpr std::string_view kEndMarkers[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<|return|>",
    "<|call|>",
    "<｜end▁of▁sentence｜>",  // DeepSeek
    "<turn|>",                // Gemma 4: the end of a turn
    "<|tool_response>",       // Gemma 4: after its calls, where the tools' results go
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
};

void load_tokens(const GgufFile& f, const VocabDefaults& d, Vocab& v) {
  const auto& tokens = f.get(kTokens).as_array(kTokens);
  if (tokens.empty()) fail<FormatError>("{} is empty", kTokens);
  if (tokens.size() > size_t(std::numeric_limits<int32_t>::max()))
    fail<FormatError>("{}: {} tokens is too many", kTokens, tokens.size());
  const size_t n = tokens.size();
  v.text.reserve(n);
  for (const Value& t : tokens) v.text.push_back(t.as_string(kTokens));

  v.score.assign(n, 0.0f);
  if (const Value* s = f.find(kScores)) {
    const auto& scores = s->as_array(kScores);
    if (scores.size() != n) fail<FormatError>("{} has {} entries for {} tokens", kScores, scores.size(), n);
    for (size_t i = 0; i < n; ++i) v.score[i] = float(scores[i].as_f64(kScores));
  } else if (d.needs_scores) {
    fail<FormatError>("tokenizer model '{}' needs {}", v.model, kScores);
  }

  v.type.assign(n, TokenType::Normal);
  if (const Value* t = f.find(kTypes)) {
    const auto& types = t->as_array(kTypes);
    if (types.size() != n) fail<FormatError>("{} has {} entries for {} tokens", kTypes, types.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t ty = types[i].as_i64(kTypes);
      if (ty < 0 || ty > int64_t(TokenType::Byte)) fail<FormatError>("{}[{}]: unknown token type {}", kTypes, i, ty);
      v.type[i] = TokenType(ty);
    }
  } else {
    // Without types, the <0xNN> texts can only be the byte tokens.
    for (size_t i = 0; i < n; ++i)
      if (parse_byte_token(v.text[i]) >= 0) v.type[i] = TokenType::Byte;
  }
}

void build_tables(Vocab& v) {
  const size_t n = v.size();
  v.byte_token.fill(-1);
  v.byte_value.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (v.type[i] != TokenType::Byte) continue;
    const int b = parse_byte_token(v.text[i]);
    if (b < 0) fail<FormatError>("{}[{}]: byte token '{}' is not of the form <0xNN>", kTokens, i, v.text[i]);
    v.byte_value[i] = int16_t(b);
    if (v.byte_token[b] < 0) v.byte_token[b] = int32_t(i);
  }

  // Longest first, so a special token is matched before any shorter one
  // inside it (llama.cpp's order); ties by id to be deterministic.
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = v.type[i];
    if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) && !v.text[i].empty())
      v.specials.push_back(int32_t(i));
  }
  std::stable_sort(v.specials.begin(), v.specials.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });
}

// Phi-3's special tokens swallow the whitespace that follows them. GGUF does
// not record this, so llama.cpp keys it on the model name and so do we, to
// tokenize Phi-3 chat prompts the same way.
void apply_strip_quirks(const GgufFile& f, Vocab& v) {
  v.strip.assign(v.size(), 0);
  std::string name = f.get_string("general.name", "");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  for (int32_t id : v.specials) v.strip[id] |= Vocab::kStripRight;
  if (int32_t id = v.find("</s>"); id >= 0) v.strip[id] |= Vocab::kStripRight;
  for (std::string_view keep : {"<unk>", "<s>", "<|endoftext|>"})
    if (int32_t id = v.find(keep); id >= 0) v.strip[id] &= uint8_t(~Vocab::kStripRight);
}

void collect_eog(Vocab& v) {
  for (int32_t id : {v.eos, v.eot, v.eom})
    if (id >= 0) v.eog.push_back(id);
  for (std::string_view marker : kEndMarkers) {
    const int32_t id = v.find(marker);
    if (id >= 0 && (v.type[id] == TokenType::Control || v.type[id] == TokenType::UserDefined)) v.eog.push_back(id);
  }
  std::sort(v.eog.begin(), v.eog.end());
  v.eog.erase(std::unique(v.eog.begin(), v.eog.end()), v.eog.end());
  // Harmony (gpt-oss): <|end|> closes one message of a turn that goes on;
  // <|return|> and <|call|> end it. GGUF cannot say so, and llama.cpp drops
  // <|end|> when both of those end generation; so do we.
  auto eog_id = [&](std::string_view marker) {
    const int32_t id = v.find(marker);
    return id >= 0 && std::binary_search(v.eog.begin(), v.eog.end(), id) ? id : -1;
  };
  if (const int32_t end = eog_id("<|end|>"); end >= 0 && eog_id("<|return|>") >= 0 && eog_id("<|call|>") >= 0)
    v.eog.erase(std::lower_bound(v.eog.begin(), v.eog.end(), end));
}

}  // namespace

int32_t Vocab::find(std::string_view s) const {
  const auto it = index_.find(s);
  return it == index_.end() ? -1 : it->second;
}

Vocab Vocab::from_gguf(const GgufFile& f, const VocabDefaults& d) {
  Vocab v;
  v.model = f.get_string("tokenizer.ggml.model");
  load_tokens(f, d, v);

  const size_t n = v.size();
  v.index_.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (!v.text[i].empty()) v.index_.emplace(v.text[i], int32_t(i));  // first id wins on duplicates

  v.bos = read_id(f, "tokenizer.ggml.bos_token_id", d.bos, n);
  v.eos = read_id(f, "tokenizer.ggml.eos_token_id", d.eos, n);
  v.unk = read_id(f, "tokenizer.ggml.unknown_token_id", d.unk, n);
  v.sep = read_id(f, "tokenizer.ggml.seperator_token_id", d.sep, n);  // sic: llama.cpp's spelling
  v.eot = read_id(f, "tokenizer.ggml.eot_token_id", -1, n);
  v.eom = read_id(f, "tokenizer.ggml.eom_token_id", -1, n);
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", d.add_bos);
  v.add_sep = f.get_bool("tokenizer.ggml.add_sep_token", d.add_sep);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", d.add_space_prefix);
  v.lowercase = f.get_bool("tokenizer.ggml.normalizer.lowercase", true);
  v.strip_accents = f.get_bool("tokenizer.ggml.normalizer.strip_accents", v.lowercase);

  build_tables(v);
  apply_strip_quirks(f, v);
  collect_eog(v);
  return v;
}

}  // namespace pagoda
