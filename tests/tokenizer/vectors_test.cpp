// llama.cpp's tokenizer test vectors (generated with the Hugging Face
// tokenizers): every input of the .inp file must give exactly the ids on the
// matching line of the .out file.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "testing/shared_data.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

struct Case {
  std::string input;
  std::vector<int32_t> ids;
};

std::vector<Case> load_cases(const std::string& name) {
  const std::string dir = "testdata/tokenizer/";
  const std::string inp = testing::read_file(testing::shared_path(dir + name + ".inp"));
  const std::string out = testing::read_file(testing::shared_path(dir + name + ".out"));

  std::vector<std::string> inputs;
  const std::string marker = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  for (size_t at; (at = inp.find(marker, pos)) != std::string::npos; pos = at + marker.size())
    inputs.push_back(inp.substr(pos, at - pos));
  if (pos < inp.size()) inputs.push_back(inp.substr(pos));  // text after the last marker is one more test

  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream nums(line);
    std::vector<int32_t> ids;
    for (int32_t id; nums >> id;) ids.push_back(id);
    expected.push_back(std::move(ids));
  }
  EXPECT_EQ(inputs.size(), expected.size()) << name;
  std::vector<Case> cases;
  for (size_t i = 0; i < inputs.size() && i < expected.size(); ++i) cases.push_back({inputs[i], expected[i]});
  return cases;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

void check_vectors(const std::string& name) {
  const auto f = GgufFile::open(testing::shared_path("testdata/tokenizer/" + name));
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const std::vector<Case> cases = load_cases(name);
  ASSERT_EQ(cases.size(), 46u);
  size_t passed = 0, round_trips = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = tok.encode(cases[i].input, /*add_bos=*/false);
    EXPECT_EQ(ids, cases[i].ids) << name << " case " << i << " input '" << cases[i].input << "'\n got     "
                                 << show(ids) << "\n expected" << show(cases[i].ids);
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
