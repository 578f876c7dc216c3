// llama.cpp's tokenizer test vectors in shared/testdata/tokenizer/: the
// .inp file holds inputs separated by a marker line, the .out file one line
// of expected ids per input. Read once here for every vector test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "testing/shared_data.h"

namespace pagoda::testing {

struct VectorCase {
  std::string input;
  std::vector<int32_t> ids;
};

inline std::vector<VectorCase> load_vector_cases(const std::string& name) {
  const std::string dir = "testdata/tokenizer/";
  const std::string inp = read_file(shared_path(dir + name + ".inp"));
  const std::string out = read_file(shared_path(dir + name + ".out"));

  std::vector<std::string> inputs;
  const std::string marker = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  for (size_t at; (at = inp.find(marker, pos)) != std::string::npos; pos = at + marker.size())
    inputs.push_back(inp.substr(pos, at - pos));
  if (pos < inp.size()) inputs.push_back(inp.substr(pos));  // text after the last marker is one more case

  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream nums(line);
    std::vector<int32_t> ids;
    for (int32_t id; nums >> id;) ids.push_back(id);
    expected.push_back(std::move(ids));
  }
  EXPECT_EQ(inputs.size(), expected.size()) << name;
  std::vector<VectorCase> cases;
  for (size_t i = 0; i < inputs.size() && i < expected.size(); ++i) cases.push_back({inputs[i], expected[i]});
  return cases;
}

inline std::string show_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

}  // namespace pagoda::testing
