// llama.cpp's tokenizer test vectors (generated with the Hugging Face
// tokenizers): every input of the .inp file must give exactly the ids on the
// matching line of the .out file.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "testing/shared_data.h"
#include "tokenizer/tokenizer.h"
#include "vector_cases.h"

namespace pagoda {
namespace {

void check_vectors(const std::string& name) {
  const auto f = GgufFile::open(testing::shared_path("testdata/tokenizer/" + name));
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const auto cases = testing::load_vector_cases(name);
  ASSERT_EQ(cases.size(), 46u);
  size_t passed = 0, round_trips = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = tok.encode(cases[i].input, /*add_bos=*/false);
    EXPECT_EQ(ids, cases[i].ids) << name << " case " << i << " input '" << cases[i].input << "'\n got     "
                                 << testing::show_ids(ids) << "\n expected" << testing::show_ids(cases[i].ids);
    passed += ids == cases[i].ids;
    // SentencePiece decoding inverts the encoding exactly (no normalisation here).
    const std::string text = tok.decode(ids);
    EXPECT_EQ(text, cases[i].input) << name << " round trip of case " << i;
    round_trips += text == cases[i].input;
  }
  std::cout << "[ vectors  ] " << name << ": " << passed << "/" << cases.size() << " match, " << round_trips << "/"
            << cases.size() << " round-trip\n";
}

TEST(TokenizerVectors, LlamaSpm) { check_vectors("ggml-vocab-llama-spm.gguf"); }
TEST(TokenizerVectors, Phi3) { check_vectors("ggml-vocab-phi-3.gguf"); }

}  // namespace
}  // namespace pagoda
