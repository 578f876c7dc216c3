// The byte-level BPE encoder and decoder on small hand-made vocabularies
// (merge order, ties, ignore_merges, missing bytes, metadata errors) and on
// GPT-2's real one (byte-exact round trips, streaming of split characters).
#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <random>

#include "synthetic_vocab.h"
#include "testing/shared_data.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Ids = std::vector<int32_t>;

// Token id b is the byte-level character for byte b; pieces follow.
struct BpeVocab {
  testing::SyntheticVocab sv;
  std::vector<std::string> merges;
  std::string pre = "gpt-2";
  bool with_merges = true;  // write tokenizer.ggml.merges (possibly empty)

  BpeVocab() {
    sv.model = "gpt2";
    for (int b = 0; b < 256; ++b) {
      std::string t;
      append_utf8(byte_to_code_point(uint8_t(b)), t);
      sv.tokens.push_back(t);
      sv.types.push_back(1);
    }
  }
  // Adds a token written in raw bytes (" a" becomes "Ġa").
  int32_t add(std::string_view raw, int32_t type = 1) {
    sv.tokens.push_back(type == 1 ? byte_level_encode(raw) : std::string(raw));
    sv.types.push_back(type);
    return int32_t(sv.tokens.size() - 1);
  }
  // Adds the merge "left right", in raw bytes; rank is the order of calls.
  void merge(std::string_view left, std::string_view right) {
    merges.push_back(byte_level_encode(left) + " " + byte_level_encode(right));
  }
  Tokenizer load() {
    auto v = sv;
    if (with_merges) v.extra.push_back({"tokenizer.ggml.merges", Value::strings(merges)});
    if (!pre.empty()) v.extra.push_back({"tokenizer.ggml.pre", Value::string(pre)});
    bytes_ = v.bytes();
    return Tokenizer::from_gguf(GgufFile::parse(bytes_.data(), bytes_.size()));
  }

 private:
  std::vector<uint8_t> bytes_;
};

Ids raw(std::string_view s) {  // the single-byte tokens of s
  Ids ids;
  for (char c : s) ids.push_back(uint8_t(c));
  return ids;
}

const Tokenizer& gpt2() {
  static const Tokenizer t =
      Tokenizer::from_gguf(GgufFile::open(testing::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf")));
  return t;
}

TEST(BpeMerges, LowestRankFirst) {
  BpeVocab v;
  const int32_t bc = v.add("bc"), ab = v.add("ab");
  v.merge("b", "c");
  v.merge("a", "b");
  EXPECT_EQ(v.load().encode("abc", false), (Ids{'a', bc}));  // "a b" waits, then no longer applies

  BpeVocab w;
  const int32_t bc2 = w.add("bc"), ab2 = w.add("ab");
  w.merge("a", "b");
  w.merge("b", "c");
  EXPECT_EQ(w.load().encode("abc", false), (Ids{ab2, 'c'}));
  (void)ab;
  (void)bc2;
}

TEST(BpeMerges, TiesGoLeftmostAndChain) {
  BpeVocab v;
  const int32_t aa = v.add("aa"), aaaa = v.add("aaaa"), abc = v.add("abc"), ab = v.add("ab");
  v.merge("a", "a");
  v.merge("aa", "aa");
  v.merge("a", "b");
  v.merge("ab", "c");
  const Tokenizer t = v.load();
  EXPECT_EQ(t.encode("aaa", false), (Ids{aa, 'a'}));
  EXPECT_EQ(t.encode("aaaaa", false), (Ids{aaaa, 'a'}));
  EXPECT_EQ(t.encode("abc", false), (Ids{abc}));
  EXPECT_EQ(t.encode("abd", false), (Ids{ab, 'd'}));
  EXPECT_EQ(t.encode("", false), Ids{});
}

TEST(BpeMerges, SpacesAndPiecesStaySeparate) {
  BpeVocab v;
  const int32_t sp_a = v.add(" a"), ab = v.add("ab");
  v.merge(" ", "a");
  v.merge("a", "b");
  const Tokenizer t = v.load();
  // " a" is one piece; merges never cross the pre-tokenizer's pieces.
  EXPECT_EQ(t.encode(" a", false), (Ids{sp_a}));
  EXPECT_EQ(t.encode("a b", false), (Ids{'a', ' ', 'b'}));    // " b": no merge
  EXPECT_EQ(t.encode("a,b", false), (Ids{'a', ',', 'b'}));    // "a", ",", "b" are pieces: no "ab"
  EXPECT_EQ(t.encode("ab ab", false), (Ids{ab, sp_a, 'b'}));  // " ab": " a" ranks first, "ab" never forms
  EXPECT_EQ(t.decode(t.encode("ab ab", false)), "ab ab");
}

TEST(BpeMerges, MergesOfUnknownTextsAreIgnored) {
  BpeVocab v;
  const int32_t xy = v.add("xy");
  v.merge("x", "q");   // "xq" is no token
  v.merge("zz", "y");  // "zz" is no token
  v.merge("x", "y");
  EXPECT_EQ(v.load().encode("xqxy", false), (Ids{'x', 'q', xy}));
}

TEST(BpeMerges, IgnoreMergesForLlama3) {
  // A whole piece that is a token is taken as it is under llama-bpe, even
  // when the merges could not build it.
  BpeVocab v;
  const int32_t hello = v.add("hello"), he = v.add("he");
  v.merge("h", "e");
  v.pre = "gpt-2";
  EXPECT_EQ(v.load().encode("hello", false), (Ids{he, 'l', 'l', 'o'}));
  v.pre = "llama-bpe";
  const Tokenizer t = v.load();
  EXPECT_EQ(t.encode("hello", false), (Ids{hello}));
  EXPECT_EQ(t.encode("hellos", false), (Ids{he, 'l', 'l', 'o', 's'}));
  // Added tokens are not BPE vocabulary: their text goes through the merges.
  BpeVocab c;
  c.pre = "llama-bpe";
  const int32_t ctl = c.add("hey", 3);
  const Ids ids = c.load().encode("hey", false);
  EXPECT_EQ(ids, raw("hey"));
  EXPECT_NE(ids, (Ids{ctl}));
}

TEST(BpeMerges, MissingByteTokens) {
  // A vocabulary without some byte's character: UNK if there is one, else
  // the byte is dropped (llama.cpp drops it too).
  BpeVocab v;
  v.sv.tokens['q'] = "<unk>";
  v.sv.types['q'] = 2;
  v.sv.extra.push_back({"tokenizer.ggml.unknown_token_id", Value::u32('q')});
  EXPECT_EQ(v.load().encode("aqb", false), (Ids{'a', 'q', 'b'}));
  v.sv.extra.clear();
  EXPECT_EQ(v.load().encode("aqb", false), (Ids{'a', 'b'}));
}

TEST(BpeTokenizer, BosDefaultsPerPreTokenizer) {
  BpeVocab v;
  const int32_t bos = v.add("<|begin_of_text|>", 3);
  v.sv.extra.push_back({"tokenizer.ggml.bos_token_id", Value::u32(uint32_t(bos))});
  v.pre = "llama-bpe";
  EXPECT_TRUE(v.load().add_bos_by_default());
  EXPECT_EQ(v.load().encode("a", true), (Ids{bos, 'a'}));
  v.pre = "gpt-2";
  EXPECT_FALSE(v.load().add_bos_by_default());
  v.pre = "llama-bpe";
  v.sv.extra.push_back({"tokenizer.ggml.add_bos_token", Value::boolean(false)});
  EXPECT_FALSE(v.load().add_bos_by_default());  // the file's word wins
  // No BOS id in the file means none (not llama.cpp's 11).
  BpeVocab n;
  EXPECT_EQ(n.load().bos_id(), -1);
  EXPECT_EQ(n.load().eos_id(), -1);
  EXPECT_THROW(n.load().encode("a", true), InvalidArgument);
}

TEST(BpeTokenizer, SpecialTokens) {
  BpeVocab v;
  const int32_t eot = v.add("<|eot_id|>", 3), tool = v.add("<tool>", 4);
  const Tokenizer t = v.load();
  EXPECT_EQ(t.encode("a<|eot_id|>", false, true), (Ids{'a', eot}));
  EXPECT_EQ(t.encode("a<tool>b", false), (Ids{'a', tool, 'b'}));  // user-defined: always
  const Ids plain = t.encode("<|eot_id|>", false);
  EXPECT_EQ(plain.size(), 10u);
  EXPECT_EQ(t.decode(plain), "<|eot_id|>");
  EXPECT_EQ(t.decode(Ids{'a', eot, tool}), "a<tool>");  // control renders nothing
  EXPECT_TRUE(t.is_end_of_generation(eot));
}

TEST(BpeTokenizer, LoadErrors) {
  BpeVocab v;
  v.with_merges = false;
  EXPECT_THROW(v.load(), FormatError);  // no merges at all
  v.with_merges = true;
  v.merges = {"ab"};
  EXPECT_THROW(v.load(), FormatError);  // not "left right"
  v.merges.clear();
  v.with_merges = false;
  v.sv.extra.push_back({"tokenizer.ggml.merges", Value::i32s({1, 2})});
  EXPECT_THROW(v.load(), FormatError);
  v.with_merges = true;
  v.sv.extra.clear();
  v.merge("a", "b");
  v.pre = "tekken";
  try {
    v.load();
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("tekken"), std::string::npos) << e.what();
  }
  v.pre = "";  // missing: llama.cpp's default split
  EXPECT_EQ(v.load().encode("a,b", false), (Ids{'a', ',', 'b'}));
}

TEST(BpeDecode, TokenBytes) {
  const Tokenizer& t = gpt2();
  EXPECT_TRUE(t.byte_level());
  const int32_t hello = t.find_token("\xC4\xA0Hello");  // "ĠHello"
  ASSERT_GE(hello, 0);
  EXPECT_EQ(t.decode_bytes(hello), " Hello");
  EXPECT_EQ(t.decode_bytes(t.find_token("\xC4\x8A")), "\n");  // "Ċ"
  EXPECT_EQ(t.decode_bytes(50256), "");                       // <|endoftext|> is control
  EXPECT_EQ(t.decode_bytes(-1), "");
  EXPECT_EQ(t.decode_bytes(1 << 30), "");
  // Byte-level BPE has no dummy prefix: a leading space is kept.
  EXPECT_EQ(t.decode(t.encode(" Hello", false)), " Hello");
  IncrementalDecoder strip(t, /*strip_leading_space=*/true);
  EXPECT_EQ(strip.push(hello), " Hello");
}

TEST(BpeDecode, StreamsCharactersSplitOverTokens) {
  const Tokenizer& t = gpt2();
  const std::string llama = "\xF0\x9F\xA6\x99";  // 🦙: GPT-2 has no token for it
  const Ids ids = t.encode(llama + "!", false);
  ASSERT_GE(ids.size(), 3u);
  IncrementalDecoder d(t);
  std::string out;
  size_t held = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = d.push(ids[i]);
    if (piece.empty()) {
      ++held;
      EXPECT_TRUE(d.has_pending());
    }
    EXPECT_EQ(utf8_sanitize(piece), piece);
    out += piece;
  }
  EXPECT_GE(held, 1u);  // the emoji's first token(s) cannot be shown alone
  EXPECT_EQ(out + d.flush(), llama + "!");
}

// Byte-level BPE covers any byte string: the tokens' bytes are the input,
// invalid UTF-8 included.
TEST(BpeDecode, RandomBytesRoundTrip) {
  const Tokenizer& t = gpt2();
  std::mt19937 rng(7);
  const std::vector<std::string> atoms = {
      "a",    "The",      " ",     "  ", "\n",       "\t",           "'s",
      "'LL",  "42",       "12345", "!",  "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\xA6\x99",
      "\xFF", "\xE2\x82", "\x80"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int n = int(rng() % 16);
    for (int i = 0; i < n; ++i) text += rng() % 4 ? atoms[rng() % atoms.size()] : std::string(1, char(rng()));
    const Ids ids = t.encode(text, false);
    std::string bytes;
    for (int32_t id : ids) bytes += t.decode_bytes(id);
    EXPECT_EQ(bytes, text) << "round " << round;
    EXPECT_EQ(t.decode(ids), utf8_sanitize(text)) << "round " << round;
  }
}

TEST(BpeTokenizer, LongInputIsFast) {
  const Tokenizer& t = gpt2();
  std::string text;
  while (text.size() < 100000)
    text += "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ нещо на Български\n\t  ";
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = t.encode(text, false);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing   ] gpt-2 encode of " << text.size() << " bytes -> " << ids.size() << " tokens: " << ms
            << " ms\n";
  EXPECT_EQ(t.decode(ids), text);
  const std::string run(100000, 'a');  // one long piece: many equal-rank merges
  EXPECT_EQ(t.decode(t.encode(run, false)), run);
}

}  // namespace
}  // namespace pagoda
