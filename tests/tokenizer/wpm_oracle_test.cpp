// WordPiece against llama.cpp v0.5.0 (libllama through dlopen,
// testing/llama_oracle.h): a synthetic BERT vocabulary written as a
// vocab-only GGUF, and llama_tokenize's ids on a corpus of strings, with and
// without [CLS]/[SEP] and special-token parsing, must be Pagoda's ids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "gguf/writer.h"
#include "testing/llama_cpp_libs.h"
#include "testing/llama_oracle.h"
#include "testing/npm_oracle.h"
#include "tokenizer/bert_vocab.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::wpm_oracle_test {
namespace {

using testing::LlamaOracle;

// A vocab-only GGUF in a temporary file, removed with it.
struct VocabFile {
  explicit VocabFile(const testing::SyntheticVocab& v) {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            ("pagoda-wpm-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".gguf"))
               .string();
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value::string(v.model));
    w.set("tokenizer.ggml.tokens", Value::strings(v.tokens));
    w.set("tokenizer.ggml.token_type", Value::i32s(v.types));
    for (const auto& [k, val] : v.extra) w.set(k, val);
    w.write(path);
  }
  ~VocabFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::string path;
};

std::vector<std::string> corpus() {
  std::vector<std::string> c = {
      "",
      " ",
      "hello",
      "Hello World",
      "hello, world!",
      "HELLO... World?!",
      "playing unaffable tokenizer tokenize embeddings",
      "the  the\tthe\nthe\r\nthe   \n\n\t  the",
      "Café über Ångström naïve résumé",
      "É Ü Å é ü å",
      "中文 日本语 中文abc日本",
      "한국어 텍스트",
      "ひらがな カタカナ",
      "emoji 😀 and 👍🏽 and ❤️",
      "unknown ab€cd x€ straße",
      "a+b=c (d) [e] {f} <g> @h #i $j %k ^l &m *n _o `p |q ~r",
      "don't it's we're i'm they've y'all",
      "[CLS] hello [SEP]",
      "hello[MASK]world",
      "[MASK][MASK] [PAD] [UNK]",
      "[cls] [Mask] [SEP",
      "numbers 123 4.56 7,890",
      std::string("ctrl\x01"
                  "chars\x7F"
                  "and\xC2\x85"
                  "nel"),
      std::string("nul\0byte", 8),
      "invalid \xFF\xFE bytes \xC3 here \xE4\xB8",
      "zero\u200Bwidth soft\u00ADhyphen",
      "\u3000ideographic\u00A0nbsp\u2028line",
      "combining e\u0301 a\u0308 stacked o\u0302\u0323",
      "Ⅻ ﬁ ① ²",  // compatibility characters: NFD (not NFKD) leaves them
      "İstanbul ΣΊΣΥΦΟΣ",
      "   leading and trailing   ",
      "one-two_three/four:five;six",
  };
  c.push_back(std::string(300, 'a'));                         // a long word that splits
  c.push_back("x" + std::string(250, 'q') + "\xE2\x82\xAC");  // a long word that cannot
  std::string mixed;
  for (int i = 0; i < 40; ++i) mixed += "The café's 中 playing, [MASK] hello! ";
  c.push_back(mixed);
  // Random strings over a small alphabet of interesting pieces.
  std::mt19937 rng(11);
  const std::vector<std::string> alphabet = {"a",     "b", "hello", "ing", " ",    "  ", "\n",     "\t",     ",",
                                             ".",     "'", "É",     "é",   "ü",    "中", "😀",      "[MASK]", "[CLS]",
                                             "[SEP]", "€", "\xFF",  "Q",   "play", "-",  "\u0301", "\u00A0"};
  for (int n = 0; n < 60; ++n) {
    std::string s;
    const int len = int(rng() % 24);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    c.push_back(s);
  }
  return c;
}

void compare_with_llama(const testing::BertVocabOptions& o) {
  const testing::SyntheticVocab v = testing::bert_vocab(o);
  // llama.cpp aborts on a duplicate text; no converted vocabulary has one.
  ASSERT_EQ(std::set<std::string>(v.tokens.begin(), v.tokens.end()).size(), v.tokens.size());
  const VocabFile file(v);
  const Tokenizer t = Tokenizer::from_gguf(GgufFile::open(file.path));
  LlamaOracle& oracle = LlamaOracle::get();
  int compared = 0;
  for (const std::string& text : corpus()) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {false, true}) {
        const std::vector<int32_t> want = oracle.tokenize(file.path, text, add_special, parse_special);
        EXPECT_EQ(t.encode(text, add_special, parse_special), want)
            << "text '" << text << "' add_special " << add_special << " parse_special " << parse_special;
        ++compared;
      }
    }
  }
  std::cout << "compared " << compared << " encodings with llama.cpp\n";
}

#define REQUIRE_LLAMA_CPP() PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage)

TEST(WpmOracle, UncasedVocabularyMatchesLlamaCpp) {
  REQUIRE_LLAMA_CPP();
  compare_with_llama({});
}

TEST(WpmOracle, CasedVocabularyMatchesLlamaCpp) {
  REQUIRE_LLAMA_CPP();
  compare_with_llama({.cased = true});
}

TEST(WpmOracle, LowercaseWithAccentsMatchesLlamaCpp) {
  REQUIRE_LLAMA_CPP();
  compare_with_llama({.keep_accents = true});
}

}  // namespace
}  // namespace pagoda::wpm_oracle_test
