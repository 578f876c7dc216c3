// GrammarMatcher on a small synthetic vocabulary: token acceptance, EOG only
// where the grammar may end, termination, rollback, forks, and fill_mask
// equal to trying every token.
#include <gtest/gtest.h>

#include <random>

#include "grammar/frontends.h"
#include "grammar/matcher.h"
#include "grammar_testing.h"

namespace pagoda::grammar {
namespace {

std::shared_ptr<const TokenVocab> small_vocab() {
  // id 0: a control token (no bytes), 1: EOS, then text tokens, with a duplicate.
  std::vector<std::string> t = {"",  "",  "a",  "b", "ab", "ba",  "abc", "c",    "\"",   "\",",     "{",
                                "}", "1", "12", "x", "a",  "bcb", " ",   "\xC3", "\xA9", "\xC3\xA9"};
  return std::make_shared<const TokenVocab>(std::move(t), std::vector<int32_t>{1});
}

std::shared_ptr<const CompiledGrammar> gbnf(const char* text) {
  return std::make_shared<const CompiledGrammar>(CompiledGrammar{compile_gbnf(text), {}});
}

std::vector<bool> mask_bits(GrammarMatcher& m) {
  std::vector<uint32_t> bits(m.mask_words());
  m.fill_mask(bits);
  std::vector<bool> out;
  for (size_t i = 0; i < m.tables().vocab().size(); ++i) out.push_back((bits[i / 32] >> (i % 32)) & 1);
  return out;
}

std::vector<bool> brute_force(const GrammarMatcher& m) {
  std::vector<bool> out;
  for (size_t i = 0; i < m.tables().vocab().size(); ++i) {
    GrammarMatcher copy = m;
    out.push_back(copy.accept(int32_t(i)));
  }
  return out;
}

TEST(Matcher, AcceptsTokensAndEndsOnlyWhereAllowed) {
  GrammarMatcher m(gbnf(R"(root ::= "ab" "c"?)"), small_vocab());
  EXPECT_FALSE(m.accept(0));  // control
  EXPECT_FALSE(m.accept(1));  // EOS before the grammar may end
  EXPECT_FALSE(m.accept(3));  // "b"
  EXPECT_TRUE(m.accept(2));   // "a"
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept(3));  // "b"
  EXPECT_TRUE(m.can_end());
  GrammarMatcher fork = m;
  EXPECT_TRUE(fork.accept(7));  // "c"
  EXPECT_FALSE(fork.accept(7));
  EXPECT_TRUE(fork.accept(1));
  EXPECT_TRUE(fork.is_terminated());
  EXPECT_FALSE(fork.accept(1));
  EXPECT_TRUE(m.accept(1));  // the original is independent
  EXPECT_TRUE(m.is_terminated());
  EXPECT_TRUE(m.rollback(1));
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.rollback(2));
  EXPECT_TRUE(m.accept(6));  // "abc" in one token
  EXPECT_FALSE(m.rollback(5));
}

TEST(Matcher, MultiByteCharactersAcrossTokens) {
  GrammarMatcher m(gbnf(R"(root ::= [^a-z]+)"), small_vocab());
  EXPECT_TRUE(m.accept(18));  // first byte of é
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept(18));
  EXPECT_TRUE(m.accept(19));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.accept(20));
}

TEST(Matcher, MaskEqualsBruteForceOnRandomWalks) {
  const char* grammars[] = {
      R"(root ::= "{" pair ("," pair)* "}"
pair ::= "\"" [a-c]* "\"" ":" num
num ::= [0-9]+)",
      R"(root ::= (x | "b" "c"*)+ "."?
x ::= "a" x "b" | "ab")",
      R"(root ::= [^a-z]* | "abc" " " root)",
  };
  std::vector<std::string> t = {"",    "{",  "}", "\"",   "\",",  "\":",      ":",    ",",  "\"a",   "a\"",    "abc",
                                "ab",  "ba", "b", "a",    "c",    "1",        "12",   "3,", "},",    "{\"",    "bc",
                                "cc.", ".",  " ", "abc ", "\xC3", "\xC3\xA9", "\xA9", "9",  "\"\":", "ab\":1", "}}"};
  auto vocab = std::make_shared<const TokenVocab>(t, std::vector<int32_t>{0});
  std::mt19937 rng(7);
  for (const char* text : grammars) {
    SCOPED_TRACE(text);
    for (size_t frames : {1u, 2u, 3u, 8u}) {
      auto tables = std::make_shared<const MaskTables>(gbnf(text), vocab, frames);
      for (int walk = 0; walk < 20; ++walk) {
        GrammarMatcher m(tables);
        for (int step = 0; step < 30; ++step) {
          const auto got = mask_bits(m);
          ASSERT_EQ(got, brute_force(m)) << "frames " << frames << " walk " << walk << " step " << step;
          std::vector<int32_t> ok;
          for (size_t i = 0; i < got.size(); ++i)
            if (got[i]) ok.push_back(int32_t(i));
          if (ok.empty()) break;
          ASSERT_TRUE(m.accept(ok[rng() % ok.size()]));
          if (m.is_terminated()) break;
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::grammar
