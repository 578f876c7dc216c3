// Tokenizer behaviour beyond the vector files: the stories260K vocabulary,
// BOS handling, special-token parsing, end-of-generation ids, the merge rules
// on hand-made vocabularies, malformed metadata, and long inputs.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "testing/shared_data.h"
#include "tokenizer/synthetic_vocab.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Ids = std::vector<int32_t>;

Tokenizer load(const std::string& rel) { return Tokenizer::from_gguf(GgufFile::open(testing::shared_path(rel))); }

const Tokenizer& llama_spm() {
  static const Tokenizer t = load("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
  return t;
}
const Tokenizer& phi3() {
  static const Tokenizer t = load("testdata/tokenizer/ggml-vocab-phi-3.gguf");
  return t;
}
const Tokenizer& stories() {
  static const Tokenizer t = load("models/stories260K.gguf");
  return t;
}

Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Tokenizer from_synthetic(const testing::SyntheticVocab& sv) {
  const auto bytes = sv.bytes();
  return Tokenizer::from_gguf(GgufFile::parse(bytes.data(), bytes.size()));
}

TEST(Tokenizer, Stories260KPrompt) {
  const Tokenizer& t = stories();
  EXPECT_EQ(t.model_name(), "llama");
  EXPECT_EQ(t.vocab_size(), 512u);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos_by_default());  // no add_bos_token key: SentencePiece default
  EXPECT_EQ(t.encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(t.encode("Once upon a time", false), (Ids{403, 407, 261, 378}));
  EXPECT_EQ(t.decode(t.encode("Once upon a time", true)), "Once upon a time");
  EXPECT_EQ(t.end_of_generation_ids(), (Ids{2}));
}

TEST(Tokenizer, Stories260KByteFallback) {
  const Tokenizer& t = stories();
  // Its 253 pieces cannot cover "ü" (C3 BC) or a newline: byte tokens 3 + byte.
  EXPECT_EQ(t.encode("\n", false), (Ids{t.find_token("\xE2\x96\x81"), 3 + 0x0A}));
  const Ids ids = t.encode("Grüße\n", false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 3 + 0xC3), ids.end());
  EXPECT_EQ(t.decode(ids), "Grüße\n");
}

TEST(Tokenizer, BosAndEmptyInput) {
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos_by_default());
  EXPECT_EQ(t.encode("", false), Ids{});
  EXPECT_EQ(t.encode("", true), Ids{1});
  EXPECT_EQ(t.encode("Hello world", true), (Ids{1, 15043, 3186}));
  EXPECT_EQ(t.encode("Hello world", false), (Ids{15043, 3186}));
  // Plain "<s>" text is not the BOS token unless special parsing is asked for.
  const Ids plain = t.encode("<s>", false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(t.decode(plain), "<s>");
}

TEST(Tokenizer, BosFromMetadata) {
  auto sv = testing::spm_base();
  testing::add_piece(sv, "\xE2\x96\x81", -1);
  sv.extra = {{"tokenizer.ggml.add_bos_token", Value::boolean(false)},
              {"tokenizer.ggml.bos_token_id", Value::u32(2)},
              {"tokenizer.ggml.eos_token_id", Value::u32(0xFFFFFFFF)}};  // "none": keeps the default
  const Tokenizer t = from_synthetic(sv);
  EXPECT_FALSE(t.add_bos_by_default());
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.encode("", true), Ids{2});
}

TEST(Tokenizer, NoBosToken) {
  testing::SyntheticVocab sv;
  sv.tokens = {"a"};
  sv.scores = {0};
  const Tokenizer t = from_synthetic(sv);
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.eos_id(), -1);
  EXPECT_FALSE(t.add_bos_by_default());
  EXPECT_THROW(t.encode("a", true), InvalidArgument);
  EXPECT_TRUE(t.end_of_generation_ids().empty());
}

TEST(Tokenizer, ParseSpecialPhi3ChatPrompt) {
  const Tokenizer& t = phi3();
  EXPECT_EQ(t.eos_id(), 32000);
  // Reference ids from llama.cpp: Phi-3's special tokens drop the whitespace
  // after them, then the text after a special token gets the dummy prefix.
  EXPECT_EQ(t.encode("<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", true, true),
            (Ids{1, 32010, 317, 21554, 13, 17628, 32007, 32001}));
  EXPECT_EQ(t.encode("<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", true, true),
            cat({{1, 32010}, t.encode("SYS\nHI", false), {32007, 32001}}));
  EXPECT_EQ(t.encode("<|end|>", false, true), Ids{32007});
  // Without parse_special the control tokens' text is ordinary text.
  const Ids plain = t.encode("<|user|>\nHi<|end|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 32010) + std::count(plain.begin(), plain.end(), 32007), 0);
  EXPECT_EQ(t.decode(plain), "<|user|>\nHi<|end|>");
  // <s> and <|endoftext|> keep the whitespace after them.
  EXPECT_EQ(t.encode("<|endoftext|> x", false, true), cat({{32000}, t.encode(" x", false)}));
  EXPECT_EQ(t.encode("<s>\nx", false, true), cat({{1}, t.encode("\nx", false)}));
}

TEST(Tokenizer, UserDefinedTokensAlwaysMatch) {
  const Tokenizer& t = phi3();
  ASSERT_EQ(t.token_type(2), TokenType::UserDefined);  // Phi-3's </s>
  EXPECT_EQ(t.encode("a</s>b", false, false), cat({t.encode("a", false), {2}, t.encode("b", false)}));
  EXPECT_EQ(t.encode("a</s>  b", false, false), t.encode("a</s>b", false, false));  // stripped on Phi-3
  EXPECT_EQ(t.decode_bytes(2), "</s>");                                             // rendered as its text
}

TEST(Tokenizer, ParseSpecialLlamaSpm) {
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.encode("<s>Hello</s>", false, true), (Ids{1, 15043, 2}));
  EXPECT_EQ(t.encode("Hello <s> world", false, true), cat({t.encode("Hello ", false), {1}, t.encode(" world", false)}));
  EXPECT_EQ(t.encode("<s>\nx", false, true), cat({{1}, t.encode("\nx", false)}));  // no stripping here
  EXPECT_EQ(t.encode("</s></s>", false, true), (Ids{2, 2}));
}

TEST(Tokenizer, EndOfGeneration) {
  const Tokenizer& p = phi3();
  EXPECT_EQ(p.end_of_generation_ids(), (Ids{32000, 32007}));  // eos <|endoftext|>, and <|end|>
  EXPECT_TRUE(p.is_end_of_generation(32007));
  EXPECT_FALSE(p.is_end_of_generation(32010));
  EXPECT_FALSE(p.is_end_of_generation(-1));
  EXPECT_EQ(llama_spm().end_of_generation_ids(), (Ids{2}));

  auto sv = testing::spm_base();
  const int32_t eot = testing::add_piece(sv, "<|eot|>", 0, 3);
  const int32_t im_end = testing::add_piece(sv, "<|im_end|>", 0, 3);
  testing::add_piece(sv, "<|end|>", 0, 1);  // a normal token with a marker's text does not stop
  sv.extra = {{"tokenizer.ggml.eot_token_id", Value::u32(uint32_t(eot))}};
  EXPECT_EQ(from_synthetic(sv).end_of_generation_ids(), (Ids{2, eot, im_end}));
}

// Every end marker llama.cpp matches by text ends generation as a control or
// user-defined token, not as a normal one; eos, eot and eom ids from the
// metadata always do.
TEST(Tokenizer, EndOfGenerationMarkers) {
  for (const char* marker :
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
        "<|end_of_text|>", "<end_of_utterance>", "<|return|>", "<|call|>", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>",
        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<turn|>", "<|tool_response>"}) {
    for (const int32_t type : {3, 4, 1}) {  // control, user-defined, normal
      auto sv = testing::spm_base();
      const int32_t id = testing::add_piece(sv, marker, 0, type);
      const Tokenizer t = from_synthetic(sv);
      EXPECT_EQ(t.is_end_of_generation(id), type != 1) << marker << " type " << type;
      EXPECT_TRUE(t.is_end_of_generation(2)) << marker;  // eos
    }
  }
  // A marker-less vocabulary: only what the metadata names.
  auto sv = testing::spm_base();
  const int32_t eot = testing::add_piece(sv, "<turn_done>", 0, 3);
  const int32_t eom = testing::add_piece(sv, "<msg_done>", 0, 3);
  testing::add_piece(sv, "<other>", 0, 3);
  sv.extra = {{"tokenizer.ggml.eot_token_id", Value::u32(uint32_t(eot))},
              {"tokenizer.ggml.eom_token_id", Value::u32(uint32_t(eom))},
              {"tokenizer.ggml.eos_token_id", Value::u32(1)}};
  EXPECT_EQ(from_synthetic(sv).end_of_generation_ids(), (Ids{1, eot, eom}));
}

// Harmony's vocabulary (gpt-oss): <|end|> ends one message of a turn that
// goes on, so it does not stop generation where <|return|> and <|call|> do.
TEST(Tokenizer, HarmonyEndDoesNotStop) {
  auto sv = testing::spm_base();
  const int32_t end = testing::add_piece(sv, "<|end|>", 0, 3);
  const int32_t ret = testing::add_piece(sv, "<|return|>", 0, 3);
  const int32_t call = testing::add_piece(sv, "<|call|>", 0, 3);
  const Tokenizer t = from_synthetic(sv);
  EXPECT_FALSE(t.is_end_of_generation(end));
  EXPECT_EQ(t.end_of_generation_ids(), (Ids{2, ret, call}));
  // Without both of them <|end|> stops as before (Phi-3).
  auto phi = testing::spm_base();
  const int32_t phi_end = testing::add_piece(phi, "<|end|>", 0, 3);
  testing::add_piece(phi, "<|return|>", 0, 3);
  EXPECT_TRUE(from_synthetic(phi).is_end_of_generation(phi_end));
}

TEST(Tokenizer, TokenTextAndBytes) {
  const Tokenizer& t = llama_spm();
  EXPECT_EQ(t.vocab_size(), 32000u);
  EXPECT_EQ(t.token_text(13), "<0x0A>");
  EXPECT_EQ(t.decode_bytes(13), "\n");
  EXPECT_EQ(t.token_text(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(t.decode_bytes(15043), " Hello");
  EXPECT_EQ(t.token_text(1), "<s>");
  EXPECT_EQ(t.decode_bytes(1), "");
  EXPECT_EQ(t.decode_bytes(0), "");  // <unk>
  EXPECT_EQ(t.decode_bytes(-1), "");
  EXPECT_EQ(t.decode_bytes(32000), "");
  EXPECT_THROW(t.token_text(32000), InvalidArgument);
  EXPECT_THROW(t.token_text(-1), InvalidArgument);
  EXPECT_EQ(t.token_type(13), TokenType::Byte);
  EXPECT_EQ(t.token_type(1), TokenType::Control);
  EXPECT_EQ(t.find_token("\xE2\x96\x81Hello"), 15043);
  EXPECT_EQ(t.find_token("no such token"), -1);
  EXPECT_EQ(t.decode(Ids{1, 15043, 3186, 2}), "Hello world");
  EXPECT_EQ(t.decode(Ids{29871, 15043}), " Hello");  // only the first dummy space goes
}

TEST(Tokenizer, InvalidUtf8InputUsesByteTokens) {
  const Tokenizer& t = llama_spm();
  auto byte = [](uint8_t b) { return int32_t(3 + b); };  // <0x00> is id 3
  EXPECT_EQ(t.encode("\xFF", false), (Ids{29871, byte(0xFF)}));
  EXPECT_EQ(t.encode("\xE2\x82", false), (Ids{29871, byte(0xE2), byte(0x82)}));  // cut-off character
  EXPECT_EQ(t.decode(t.encode("a\xFF"
                              "b",
                              false)),
            "a\xEF\xBF\xBD"
            "b");
}

// A vocabulary of a, b, c, ▁ plus chosen pairs, to pin the merge order.
struct Merges {
  testing::SyntheticVocab sv = testing::spm_base();
  int32_t a, b, c, space;
  Merges() {
    a = testing::add_piece(sv, "a", -10);
    b = testing::add_piece(sv, "b", -10);
    c = testing::add_piece(sv, "c", -10);
    space = testing::add_piece(sv, "\xE2\x96\x81", -10);
  }
};

TEST(TokenizerMerges, HighestScoreWins) {
  Merges m;
  const int32_t ab = testing::add_piece(m.sv, "ab", -1);
  const int32_t bc = testing::add_piece(m.sv, "bc", -2);
  EXPECT_EQ(from_synthetic(m.sv).encode("abc", false), (Ids{m.space, ab, m.c}));
  m.sv.scores[ab] = -3;
  EXPECT_EQ(from_synthetic(m.sv).encode("abc", false), (Ids{m.space, m.a, bc}));
}

TEST(TokenizerMerges, TiesGoLeftmost) {
  Merges m;
  const int32_t ab = testing::add_piece(m.sv, "ab", -1);
  testing::add_piece(m.sv, "bc", -1);
  const int32_t ba = testing::add_piece(m.sv, "ba", -1);
  m.sv.extra = {{"tokenizer.ggml.add_space_prefix", Value::boolean(false)}};
  const Tokenizer t = from_synthetic(m.sv);
  EXPECT_EQ(t.encode("abc", false), (Ids{ab, m.c}));
  EXPECT_EQ(t.encode("ababa", false), (Ids{ab, ab, m.a}));
  EXPECT_EQ(t.encode("babab", false), (Ids{ba, ba, m.b}));
}

TEST(TokenizerMerges, MergesChainAndFallBack) {
  Merges m;
  testing::add_piece(m.sv, "ab", -1);
  const int32_t abc = testing::add_piece(m.sv, "abc", -5);  // reachable only through "ab"
  m.sv.extra = {{"tokenizer.ggml.add_space_prefix", Value::boolean(false)}};
  const Tokenizer t = from_synthetic(m.sv);
  EXPECT_EQ(t.encode("abc", false), (Ids{abc}));
  EXPECT_EQ(t.encode("abcd", false), (Ids{abc, 3 + 'd'}));                  // byte fallback
  EXPECT_EQ(t.encode("a\xC3\xA9", false), (Ids{m.a, 3 + 0xC3, 3 + 0xA9}));  // é as two bytes
  EXPECT_EQ(t.encode("a b", false), (Ids{m.a, m.space, m.b}));              // spaces become ▁
}

TEST(TokenizerMerges, ControlTokensAreNeverMerged) {
  Merges m;
  m.sv.extra = {{"tokenizer.ggml.add_space_prefix", Value::boolean(false)}};
  const int32_t lt_s = testing::add_piece(m.sv, "<s", -1);
  const int32_t gt = testing::add_piece(m.sv, ">", -1);
  testing::add_piece(m.sv, "<", -1);
  testing::add_piece(m.sv, "s", -1);
  // "<s" + ">" spells the control token <s> (id 1), which text never produces.
  EXPECT_EQ(from_synthetic(m.sv).encode("<s>", false), (Ids{lt_s, gt}));
}

TEST(TokenizerMerges, UnknownWithoutByteTokens) {
  testing::SyntheticVocab sv;
  sv.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"};
  sv.scores = {0, 0, 0, -1, -1};
  sv.types = {2, 3, 3, 1, 1};
  const Tokenizer t = from_synthetic(sv);
  EXPECT_EQ(t.encode("a\xC3\xA9"
                     "a",
                     false),
            (Ids{3, 4, 0, 4}));  // one <unk> per character
  EXPECT_EQ(t.decode(Ids{3, 4, 0, 4}), "aa");
}

TEST(TokenizerMerges, DummyPrefix) {
  const Tokenizer& t = llama_spm();
  // The prefix is added once at the start of the text, also before a space.
  EXPECT_EQ(t.encode(" Hello", false), (Ids{29871, 15043}));
  auto sv = testing::spm_base();
  const int32_t a = testing::add_piece(sv, "a", -1);
  const int32_t sp = testing::add_piece(sv, "\xE2\x96\x81", -1);
  EXPECT_EQ(from_synthetic(sv).encode("a", false), (Ids{sp, a}));
  sv.extra = {{"tokenizer.ggml.add_space_prefix", Value::boolean(false)}};
  const Tokenizer no_prefix = from_synthetic(sv);
  EXPECT_EQ(no_prefix.encode("a", false), (Ids{a}));
  EXPECT_EQ(no_prefix.decode(Ids{sp, a}), "a");  // decode still drops the first space (SentencePiece)
}

TEST(TokenizerLoad, MalformedVocabularies) {
  auto expect_error = [](const testing::SyntheticVocab& sv, const char* what) {
    const auto bytes = sv.bytes();
    const GgufFile f = GgufFile::parse(bytes.data(), bytes.size());
    EXPECT_THROW(Tokenizer::from_gguf(f), FormatError) << what;
  };
  const auto good = testing::spm_base();
  ASSERT_NO_THROW(from_synthetic(good));

  auto sv = good;
  sv.tokens.clear();
  expect_error(sv, "missing tokens");
  sv = good;
  sv.scores.pop_back();
  expect_error(sv, "scores shorter than tokens");
  sv = good;
  sv.scores.clear();
  expect_error(sv, "missing scores");
  sv = good;
  sv.types.push_back(1);
  expect_error(sv, "token_type longer than tokens");
  sv = good;
  sv.types[5] = 9;
  expect_error(sv, "unknown token type");
  sv = good;
  sv.tokens[10] = "<0xZZ>";
  expect_error(sv, "malformed byte token");
  sv = good;
  sv.model.clear();
  expect_error(sv, "missing tokenizer.ggml.model");
  sv = good;
  sv.tokens.clear();
  sv.extra = {{"tokenizer.ggml.tokens", Value::i32s({1, 2, 3})}};
  sv.scores = {0, 0, 0};
  sv.types = {1, 1, 1};
  expect_error(sv, "tokens that are not strings");
  sv = good;
  sv.extra = {{"tokenizer.ggml.add_bos_token", Value::string("yes")}};
  expect_error(sv, "add_bos_token of the wrong type");
}

TEST(TokenizerLoad, UnsupportedModelIsNamed) {
  auto sv = testing::spm_base();
  sv.model = "wordpiece-x";
  try {
    from_synthetic(sv);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("wordpiece-x"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, LongInputIsFast) {
  const Tokenizer& t = llama_spm();
  std::string text;
  while (text.size() < 100000)
    text += "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ нещо на Български\n\t  ";
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = t.encode(text, true);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing   ] encode of " << text.size() << " bytes -> " << ids.size() << " tokens: " << ms << " ms\n";
  EXPECT_EQ(t.decode(ids), text);
  // One long run of a single character: many equal-score merge candidates.
  const std::string run(100000, 'a');
  EXPECT_EQ(t.decode(t.encode(run, false)), run);
}

}  // namespace
}  // namespace pagoda
