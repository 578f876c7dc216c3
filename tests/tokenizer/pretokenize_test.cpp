// The byte-level BPE building blocks, case by case: Unicode categories and
// White_Space, GPT-2's byte alphabet, and every alternative of each
// pre-tokenizer split regex (including the backtracking of \s+(?!\S) and
// \s*[\r\n]+).
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(PreTokenizer p, std::string_view text) {
  Pieces out;
  for (std::string_view s : pre_tokenize(p, text)) out.emplace_back(s);
  return out;
}

TEST(Unicode, GeneralCategories) {
  using C = GeneralCategory;
  EXPECT_EQ(general_category('A'), C::Lu);
  EXPECT_EQ(general_category('z'), C::Ll);
  EXPECT_EQ(general_category(0xE9), C::Ll);    // é
  EXPECT_EQ(general_category(0x4E2D), C::Lo);  // 中
  EXPECT_EQ(general_category(0x1780), C::Lo);  // ក (Khmer)
  EXPECT_EQ(general_category(0x17B6), C::Mc);  // ា, a Khmer vowel sign: not a letter
  EXPECT_EQ(general_category(0x02B0), C::Lm);  // ʰ
  EXPECT_EQ(general_category('7'), C::Nd);
  EXPECT_EQ(general_category(0x0663), C::Nd);  // ٣
  EXPECT_EQ(general_category(0xBD), C::No);    // ½
  EXPECT_EQ(general_category(0x216B), C::Nl);  // Ⅻ
  EXPECT_EQ(general_category(','), C::Po);
  EXPECT_EQ(general_category('_'), C::Pc);
  EXPECT_EQ(general_category('('), C::Ps);
  EXPECT_EQ(general_category('$'), C::Sc);
  EXPECT_EQ(general_category('+'), C::Sm);
  EXPECT_EQ(general_category(' '), C::Zs);
  EXPECT_EQ(general_category('\n'), C::Cc);
  EXPECT_EQ(general_category(0x200D), C::Cf);   // zero-width joiner
  EXPECT_EQ(general_category(0x1F999), C::So);  // 🦙
  EXPECT_EQ(general_category(0x1D400), C::Lu);  // 𝐀, past the BMP
  EXPECT_EQ(general_category(0x0378), C::Cn);   // unassigned
  EXPECT_EQ(general_category(0xE000), C::Co);
  EXPECT_EQ(general_category(0x10FFFF), C::Cn);
  EXPECT_EQ(general_category(0x110000), C::Cn);
  EXPECT_EQ(general_category(kInvalidCodePoint), C::Cn);
  EXPECT_TRUE(is_letter(0x0416) && !is_letter('1') && !is_letter(0x17B6));
  EXPECT_TRUE(is_number(0xB2) && !is_number('a'));              // ² is No
  EXPECT_TRUE(is_punctuation(0x3002) && !is_punctuation('$'));  // 。
  EXPECT_STREQ(unicode_version(), "14.0.0");
}

TEST(Unicode, WhiteSpaceProperty) {
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x2005u, 0x200Au,
                      0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
    EXPECT_TRUE(is_whitespace(cp)) << std::hex << cp;
  // Not White_Space, though some libraries count them: information
  // separators, zero-width space, BOM, Mongolian vowel separator.
  for (uint32_t cp : {0x08u, 0x1Cu, 0x1Fu, 0x200Bu, 0xFEFFu, 0x180Eu, uint32_t('a'), kInvalidCodePoint})
    EXPECT_FALSE(is_whitespace(cp)) << std::hex << cp;
}

TEST(Unicode, DecodeKeepsInvalidBytes) {
  const std::string s = "a\xC3\xA9\xFF\xE2\x82 \xF0\x9F\xA6\x99";
  const auto cps = decode_code_points(s);
  ASSERT_EQ(cps.size(), 7u);
  EXPECT_EQ(cps[0].cp, uint32_t('a'));
  EXPECT_EQ(cps[1].cp, 0xE9u);
  EXPECT_EQ(cps[1].length, 2u);
  EXPECT_EQ(cps[2].cp, kInvalidCodePoint);  // 0xFF
  EXPECT_EQ(cps[3].cp, kInvalidCodePoint);  // truncated E2 82: each byte alone
  EXPECT_EQ(cps[4].cp, kInvalidCodePoint);
  EXPECT_EQ(cps[5].cp, uint32_t(' '));
  EXPECT_EQ(cps[6].cp, 0x1F999u);
  EXPECT_EQ(cps[6].offset, 7u);
  std::string back;
  append_utf8(0x1F999, back);
  append_utf8(0xE9, back);
  append_utf8(0xD800, back);  // a surrogate cannot be written
  EXPECT_EQ(back, "\xF0\x9F\xA6\x99\xC3\xA9\xEF\xBF\xBD");
}

TEST(ByteLevel, Gpt2Alphabet) {
  EXPECT_EQ(byte_to_code_point('A'), uint32_t('A'));
  EXPECT_EQ(byte_to_code_point('!'), uint32_t('!'));
  EXPECT_EQ(byte_to_code_point(0), 0x100u);
  EXPECT_EQ(byte_to_code_point('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_to_code_point(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_to_code_point(0x7F), 0x121u);
  EXPECT_EQ(byte_to_code_point(0xA0), 0x142u);
  EXPECT_EQ(byte_to_code_point(0xA1), 0xA1u);
  EXPECT_EQ(byte_to_code_point(0xAD), 0x143u);  // soft hyphen, the last remapped byte
  EXPECT_EQ(byte_to_code_point(0xFF), 0xFFu);
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_code_point(uint8_t(b));
    seen.insert(cp);
    EXPECT_EQ(code_point_to_byte(cp), b);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(code_point_to_byte(0x144), -1);
  EXPECT_EQ(code_point_to_byte(0x20), -1);  // a raw space is not in the alphabet
  EXPECT_EQ(code_point_to_byte(0x4E2D), -1);

  EXPECT_EQ(byte_level_encode("Hi there\n"), "Hi\xC4\xA0there\xC4\x8A");
  EXPECT_EQ(byte_level_encode("\xC3\xA9"), "\xC3\x83\xC2\xA9");  // é's two bytes: Ã ©
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  // Characters outside the alphabet (and invalid bytes) pass through.
  EXPECT_EQ(byte_level_decode("\xC4\xA0x \xE4\xB8\xAD\xFF"), " x \xE4\xB8\xAD\xFF");
}

TEST(PreTokenizerNames, AliasesAndErrors) {
  EXPECT_EQ(pre_tokenizer_from_name(""), PreTokenizer::Default);
  EXPECT_EQ(pre_tokenizer_from_name("default"), PreTokenizer::Default);
  EXPECT_EQ(pre_tokenizer_from_name("gpt-2"), PreTokenizer::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("phi-2"), PreTokenizer::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizer::Llama3);
  EXPECT_EQ(pre_tokenizer_from_name("llama3"), PreTokenizer::Llama3);
  EXPECT_EQ(pre_tokenizer_from_name("qwen2"), PreTokenizer::Qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-r1-qwen"), PreTokenizer::Qwen2);
  for (PreTokenizer p : {PreTokenizer::Default, PreTokenizer::Gpt2, PreTokenizer::Llama3, PreTokenizer::Qwen2})
    EXPECT_EQ(pre_tokenizer_from_name(pre_tokenizer_name(p)), p);
  try {
    pre_tokenizer_from_name("deepseek-coder");
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("deepseek-coder"), std::string::npos) << e.what();
  }
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
TEST(PreTokenizeGpt2, EachAlternative) {
  const auto P = PreTokenizer::Gpt2;
  EXPECT_EQ(split(P, ""), Pieces{});
  EXPECT_EQ(split(P, "Hello world"), (Pieces{"Hello", " world"}));
  // Contractions are lower-case only here.
  EXPECT_EQ(split(P, "I'm they're we'll 'd"), (Pieces{"I", "'m", " they", "'re", " we", "'ll", " '", "d"}));
  EXPECT_EQ(split(P, "I'M"), (Pieces{"I", "'", "M"}));
  EXPECT_EQ(split(P, "'x"), (Pieces{"'", "x"}));
  // Letters, numbers and the rest each take one optional leading space.
  EXPECT_EQ(split(P, "abc123 456!? ?x"), (Pieces{"abc", "123", " 456", "!?", " ?", "x"}));
  EXPECT_EQ(split(P, "été Ünïcödé"), (Pieces{"été", " Ünïcödé"}));
  EXPECT_EQ(split(P, "½⅓ ٣"), (Pieces{"½⅓", " ٣"}));  // \p{N} is more than digits
  // Only a plain space joins the next piece; a tab or NBSP stands alone.
  EXPECT_EQ(split(P, "a\tb"), (Pieces{"a", "\t", "b"}));
  EXPECT_EQ(split(P,
                  "a\xC2\xA0"
                  "b"),
            (Pieces{"a", "\xC2\xA0", "b"}));
  // \s+(?!\S): a run before a word leaves its last space to the word...
  EXPECT_EQ(split(P, "  Hello"), (Pieces{" ", " Hello"}));
  EXPECT_EQ(split(P, "a    b"), (Pieces{"a", "   ", " b"}));
  EXPECT_EQ(split(P, "a\t\tb"), (Pieces{"a", "\t", "\t", "b"}));
  EXPECT_EQ(split(P, "x\n\ny"), (Pieces{"x", "\n", "\n", "y"}));
  // ...and a run that ends the text stays whole.
  EXPECT_EQ(split(P, "a  \n "), (Pieces{"a", "  \n "}));
  EXPECT_EQ(split(P, "   "), (Pieces{"   "}));
  // Invalid bytes count as "other" symbols.
  EXPECT_EQ(split(P, "a\xFF\xFE b"), (Pieces{"a", "\xFF\xFE", " b"}));
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
TEST(PreTokenizeLlama3, EachAlternative) {
  const auto P = PreTokenizer::Llama3;
  EXPECT_EQ(split(P, "Hello world"), (Pieces{"Hello", " world"}));
  // Contractions in any case.
  EXPECT_EQ(split(P, "I'M WE'LL it'S x'Re"), (Pieces{"I", "'M", " WE", "'LL", " it", "'S", " x", "'Re"}));
  // Any one non-letter, non-digit, non-newline symbol may lead a word.
  EXPECT_EQ(split(P, "\tword"), (Pieces{"\tword"}));
  EXPECT_EQ(split(P, "(word"), (Pieces{"(word"}));
  EXPECT_EQ(split(P, "'ied"), (Pieces{"'ied"}));
  EXPECT_EQ(split(P, "\nword"), (Pieces{"\n", "word"}));
  EXPECT_EQ(split(P, "3x"), (Pieces{"3", "x"}));
  // Leftmost match first: at the first "(" the punctuation alternative
  // takes both brackets, so the word does not get one.
  EXPECT_EQ(split(P, "((x"), (Pieces{"((", "x"}));
  // Numbers in groups of at most three, never with a leading space.
  EXPECT_EQ(split(P, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split(P, "a 12"), (Pieces{"a", " ", "12"}));
  // Punctuation takes a leading space and the newlines after it.
  EXPECT_EQ(split(P, "a...\n\nb"), (Pieces{"a", "...\n\n", "b"}));
  EXPECT_EQ(split(P, "x !?\r\n"), (Pieces{"x", " !?\r\n"}));
  // \s*[\r\n]+: whitespace through the last newline of the run.
  EXPECT_EQ(split(P, "a \n\n b"), (Pieces{"a", " \n\n", " b"}));
  EXPECT_EQ(split(P, "a\n \n\tb"), (Pieces{"a", "\n \n", "\tb"}));
  EXPECT_EQ(split(P, "\n\n\n"), (Pieces{"\n\n\n"}));
  // \s+(?!\S) and \s+ as in GPT-2.
  EXPECT_EQ(split(P, "x   y"), (Pieces{"x", "  ", " y"}));
  EXPECT_EQ(split(P, "x  "), (Pieces{"x", "  "}));
  EXPECT_EQ(split(P, "x  1"), (Pieces{"x", " ", " ", "1"}));
  EXPECT_EQ(split(P, "\xE2\x80\x83\xE2\x80\x83x"), (Pieces{"\xE2\x80\x83", "\xE2\x80\x83x"}));  // em spaces
}

TEST(PreTokenizeQwen2, SingleDigits) {
  const auto P = PreTokenizer::Qwen2;
  EXPECT_EQ(split(P, "12345"), (Pieces{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(split(P, "v2.0 x'S"), (Pieces{"v", "2", ".", "0", " x", "'S"}));
  EXPECT_EQ(split(P, "a \n\n b"), (Pieces{"a", " \n\n", " b"}));
}

// llama.cpp's fallback: [\p{P}\$\+<=>\^~\|]+, then the GPT-2 split, then
// \p{N}+, then [0-9][0-9][0-9], each on the pieces of the one before.
TEST(PreTokenizeDefault, FourSplitsInTurn) {
  const auto P = PreTokenizer::Default;
  EXPECT_EQ(split(P, "Hello, world! 12345 a+b"),
            (Pieces{"Hello", ",", " world", "!", " ", "123", "45", " a", "+", "b"}));
  EXPECT_EQ(split(P, "$x<=y"), (Pieces{"$", "x", "<=", "y"}));
  EXPECT_EQ(split(P, "don't"), (Pieces{"don", "'", "t"}));  // the apostrophe is cut out first
  EXPECT_EQ(split(P, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split(P, "x ½½"), (Pieces{"x", " ", "½½"}));
}

// Whatever the input, the pieces are non-empty and add up to it.
TEST(PreTokenize, PiecesCoverRandomBytes) {
  std::mt19937 rng(42);
  const std::vector<std::string> atoms = {"a",
                                          "Z",
                                          " ",
                                          "  ",
                                          "\t",
                                          "\n",
                                          "\r\n",
                                          "'",
                                          "'s",
                                          "'LL",
                                          "7",
                                          "123",
                                          "!",
                                          "...",
                                          "\xC3\xA9",
                                          "\xE4\xB8\xAD",
                                          "\xF0\x9F\xA6\x99",
                                          "\xFF",
                                          "\xE2\x82",
                                          "\xC2\xA0",
                                          "\xE2\x80\x83",
                                          "\xD9\xA3",
                                          "+",
                                          "$"};
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const int n = int(rng() % 20);
    for (int i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
    for (PreTokenizer p : {PreTokenizer::Default, PreTokenizer::Gpt2, PreTokenizer::Llama3, PreTokenizer::Qwen2}) {
      std::string joined;
      for (std::string_view piece : pre_tokenize(p, text)) {
        EXPECT_FALSE(piece.empty());
        joined += piece;
      }
      EXPECT_EQ(joined, text) << pre_tokenizer_name(p) << " round " << round;
    }
  }
}

}  // namespace
}  // namespace pagoda
