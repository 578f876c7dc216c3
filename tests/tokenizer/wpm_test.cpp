// WordPiece ("bert") tokenization on a small BERT-layout vocabulary: the
// normalizer and word splitting, greedy longest-match pieces, [UNK], the
// [CLS] ... [SEP] framing, special-token parsing, metadata defaults, and
// decoding back to readable text. tests/tokenizer/wpm_oracle_test.cpp checks
// the same encoder against llama.cpp itself.
#include "tokenizer/wpm.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/bert_vocab.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

Tokenizer bert(const testing::BertVocabOptions& o = {}) {
  const auto bytes = testing::bert_vocab(o).bytes();
  return Tokenizer::from_gguf(GgufFile::parse(bytes.data(), bytes.size()));
}

const Tokenizer& uncased() {
  static const Tokenizer t = bert();
  return t;
}

int32_t id(const Tokenizer& t, const std::string& piece) {
  const int32_t i = t.find_token(piece);
  EXPECT_GE(i, 0) << piece;
  return i;
}
int32_t word(const Tokenizer& t, const std::string& w) { return id(t, "\xE2\x96\x81" + w); }

TEST(Wpm, WordsAreLowercasedStrippedAndSplitOnPunctuation) {
  EXPECT_EQ(wpm_words("Hello, World!", true, true), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(wpm_words("  many\t\tspaces\n\nhere  ", true, true), (Words{"many", "spaces", "here"}));
  EXPECT_EQ(wpm_words("Café über Ångström", true, true), (Words{"cafe", "uber", "angstrom"}));
  EXPECT_EQ(wpm_words("Café", false, false), (Words{"Café"}));
  EXPECT_EQ(wpm_words("Café", false, true), (Words{"Cafe"}));
  // CJK ideographs are words of one character; kana is not split.
  EXPECT_EQ(wpm_words("中文abc日本", true, true), (Words{"中", "文", "abc", "日", "本"}));
  // ASCII symbols split; a symbol beyond ASCII (€) stays inside its word.
  EXPECT_EQ(wpm_words("a+b 5€x", true, true), (Words{"a", "+", "b", "5€x"}));
  // Control characters and invalid bytes vanish without splitting the word.
  EXPECT_EQ(wpm_words(std::string("ab\x01"
                                  "c\xFF"
                                  "d\x00"
                                  "e",
                                  9),
                      true, true),
            (Words{"abcde"}));
  EXPECT_EQ(wpm_words("", true, true), (Words{}));
  EXPECT_EQ(wpm_words(" \n\t ", true, true), (Words{}));
}

TEST(Wpm, GreedyLongestMatchWithContinuationPieces) {
  const Tokenizer& t = uncased();
  EXPECT_EQ(t.model_name(), "bert");
  EXPECT_EQ(t.encode("playing", false), (Ids{word(t, "play"), id(t, "ing")}));
  EXPECT_EQ(t.encode("unaffable", false), (Ids{word(t, "un"), id(t, "aff"), id(t, "able")}));
  EXPECT_EQ(t.encode("tokenizer tokenize", false),
            (Ids{word(t, "token"), id(t, "izer"), word(t, "token"), id(t, "ize")}));
  // No whole-word piece: the characters, the first one a word start.
  EXPECT_EQ(t.encode("xyz", false), (Ids{word(t, "x"), id(t, "y"), id(t, "z")}));
  EXPECT_EQ(t.encode("Hello, WORLD.", false), (Ids{word(t, "hello"), word(t, ","), word(t, "world"), word(t, ".")}));
}

TEST(Wpm, UncoverableWordIsOneUnknown) {
  const Tokenizer& t = uncased();
  EXPECT_EQ(t.encode("hello ab€cd world", false), (Ids{word(t, "hello"), 100, word(t, "world")}));
  EXPECT_EQ(t.encode("😀", false), (Ids{100}));
  EXPECT_EQ(t.encode("straße", false), (Ids{100}));
}

TEST(Wpm, SpecialTokensFrameTheInput) {
  const Tokenizer& t = uncased();
  EXPECT_EQ(t.bos_id(), 101);  // llama.cpp's default: no BOS key in BERT files
  EXPECT_EQ(t.sep_id(), 102);
  EXPECT_TRUE(t.add_bos_by_default());
  EXPECT_EQ(t.encode("hello", true), (Ids{101, word(t, "hello"), 102}));
  EXPECT_EQ(t.encode("", true), (Ids{101, 102}));
  EXPECT_EQ(t.encode("", false), (Ids{}));
}

TEST(Wpm, SpecialTextIsParsedOnlyWhenAsked) {
  const Tokenizer& t = uncased();
  EXPECT_EQ(t.encode("hello [MASK] world", false, true), (Ids{word(t, "hello"), 103, word(t, "world")}));
  EXPECT_EQ(t.encode("[CLS]hello[SEP]", false, true), (Ids{101, word(t, "hello"), 102}));
  // Unparsed, the brackets are punctuation and the name a word.
  EXPECT_EQ(t.encode("[MASK]", false, false),
            (Ids{word(t, "["), word(t, "m"), id(t, "a"), id(t, "s"), id(t, "k"), word(t, "]")}));
}

TEST(Wpm, CasedVocabularyKeepsCaseAndAccents) {
  const Tokenizer t = bert({.cased = true});
  EXPECT_EQ(t.encode("Hello Café", false), (Ids{word(t, "Hello"), word(t, "Café")}));
  EXPECT_EQ(t.encode("hello", false), (Ids{word(t, "hello")}));
}

TEST(Wpm, NormalizerKeysAndDefaults) {
  const Tokenizer uncased_t = bert();
  EXPECT_TRUE(uncased_t.vocab().lowercase);
  EXPECT_TRUE(uncased_t.vocab().strip_accents);  // follows lowercase when absent
  const Tokenizer cased = bert({.cased = true});
  EXPECT_FALSE(cased.vocab().lowercase);
  EXPECT_FALSE(cased.vocab().strip_accents);
  const Tokenizer accents = bert({.keep_accents = true});
  EXPECT_TRUE(accents.vocab().lowercase);
  EXPECT_FALSE(accents.vocab().strip_accents);
  EXPECT_EQ(accents.encode("É", false), (Ids{word(accents, "é")}));
  EXPECT_EQ(uncased_t.encode("É", false), (Ids{word(uncased_t, "e")}));
}

TEST(Wpm, MissingSpecialIdsAreRefusedNotAborted) {
  testing::SyntheticVocab v;
  v.model = "bert";
  v.tokens = {"[UNK]", "\xE2\x96\x81hi"};
  v.types = {3, 1};
  const auto bytes = v.bytes();
  const Tokenizer t = Tokenizer::from_gguf(GgufFile::parse(bytes.data(), bytes.size()));
  EXPECT_EQ(t.encode("hi", false), (Ids{1}));
  EXPECT_THROW(t.encode("hi", true), InvalidArgument);  // no [CLS] at 101, no [SEP] at 102
  EXPECT_EQ(t.encode("zz", false), (Ids{}));            // no [UNK] at 100: the word is dropped
}

TEST(Wpm, DecodeReadsBackNormalizedText) {
  const Tokenizer& t = uncased();
  EXPECT_EQ(t.decode(t.encode("Hello, World!", true)), "hello, world!");
  EXPECT_EQ(t.decode(t.encode("unaffable playing", true)), "unaffable playing");
  // Streaming: the first word's prefix space is dropped, later ones kept.
  IncrementalDecoder d(t, /*strip_leading_space=*/true);
  std::string out;
  for (int32_t i : t.encode("play hello", true)) out += d.push(i);
  EXPECT_EQ(out + d.flush(), "play hello");
}

TEST(Wpm, CleanSpacesAsLlamaCpp) {
  EXPECT_EQ(wpm_clean_spaces("hello , world ."), "hello, world.");
  EXPECT_EQ(wpm_clean_spaces("what ? no !"), "what? no!");
  EXPECT_EQ(wpm_clean_spaces("it ' s"), "it's");
  EXPECT_EQ(wpm_clean_spaces("he 's we 're i 'm they 've"), "he's we're i'm they've");
  EXPECT_EQ(wpm_clean_spaces("don 't"), "don 't");
  EXPECT_EQ(wpm_clean_spaces(""), "");
  EXPECT_EQ(wpm_clean_spaces(" ."), ".");  // the first byte goes too, as in llama.cpp
}

// decode(encode(x)) is x lowercased for ASCII sentences of vocabulary letters
// with single spaces and the punctuation the clean-up removes spaces before.
TEST(Wpm, RoundTripOfPlainAsciiSentences) {
  const Tokenizer& t = uncased();
  std::mt19937 rng(7);
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int n = 0; n < 300; ++n) {
    std::string s;
    const int words = 1 + int(rng() % 8);
    for (int w = 0; w < words; ++w) {
      if (w) s += ' ';
      const int len = 1 + int(rng() % 9);
      for (int i = 0; i < len; ++i) s += letters[rng() % letters.size()];
      if (rng() % 4 == 0) s += ".,!?"[rng() % 4];
    }
    std::string lower = s;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(t.decode(t.encode(s, true)), lower) << s;
  }
}

// Whitespace costs no token, so the bytes of a text bound nothing.
TEST(Wpm, NoTokenCountBoundFromBytes) {
  const Tokenizer& t = uncased();
  const std::string text = "a" + std::string(100000, ' ') + "b";
  EXPECT_EQ(t.encode(text, false).size(), 2u);
  EXPECT_LE((text.size() + t.max_token_bytes() - 1) / t.max_token_bytes(), 2u);
}

TEST(Wpm, LongWordsAndLongInputs) {
  const Tokenizer& t = uncased();
  const Ids long_word = t.encode(std::string(5000, 'a'), false);
  ASSERT_EQ(long_word.size(), 5000u);  // "▁a" then 4999 times "a": no word-length cap in llama.cpp
  EXPECT_EQ(long_word[0], word(t, "a"));
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "hello world, ";
  EXPECT_EQ(t.encode(text, false).size(), 60000u);
}

}  // namespace
}  // namespace pagoda
