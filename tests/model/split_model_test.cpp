// Split GGUF models (gguf/split.h) written by the project's writer: the first
// part opens every part as one file, and the model computes the same logits
// as from the whole file; broken sets of parts are refused clearly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "gguf/file.h"
#include "gguf/split.h"
#include "model/model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("pagoda-split-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

// Writes the model whole and as `parts` parts; returns {whole, first part}.
std::pair<std::string, std::string> write_both(const Dir& d, int parts) {
  SyntheticModelSpec spec;
  spec.type = TensorType::Q8_0;
  spec.n_embd = 64;
  const GgufWriter w = synthetic_model(spec);
  const std::string whole = (d.path / "model.gguf").string();
  w.write(whole);
  const auto split = w.split(parts);
  for (int i = 0; i < parts; ++i) split[size_t(i)].write(split_name((d.path / "model").string(), i + 1, parts));
  return {whole, split_name((d.path / "model").string(), 1, parts)};
}

std::vector<float> logits_of(Model& m) {
  KvStorage kv(m.config(), 8, 16, KvType::F32);
  ThreadPool pool(2);
  Batch b;
  const std::vector<int32_t> table = {0};
  b.add_sequence(table);
  for (int i = 0; i < 5; ++i) b.add(int32_t(10 + 7 * i), 0, i, i == 4);
  std::vector<float> logits;
  m.forward(b, kv, pool, logits);
  return logits;
}

TEST(SplitGguf, NamesRoundTrip) {
  EXPECT_EQ(split_name("a/b", 2, 3), "a/b-00002-of-00003.gguf");
  const auto n = parse_split_name("dir/Model-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->prefix, "dir/Model-Q4_K_M");
  EXPECT_EQ(n->no, 2);
  EXPECT_EQ(n->count, 3);
  for (const char* bad : {"model.gguf", "-00001-of-00002.gguf", "m-00003-of-00002.gguf", "m-00000-of-00002.gguf",
                          "m-0001-of-00002.gguf", "m-00001-of-00002.bin", "d/-00001-of-00002.gguf"})
    EXPECT_FALSE(parse_split_name(bad)) << bad;
}

TEST(SplitGguf, PartsLoadAsOneModelWithTheSameLogits) {
  const Dir d;
  const auto [whole, first] = write_both(d, 3);
  const auto f = GgufFile::open(first);
  const auto w = GgufFile::open(whole);
  EXPECT_EQ(f.parts(), 3u);
  ASSERT_EQ(f.tensors().size(), w.tensors().size());
  for (const auto& t : w.tensors()) {
    const TensorInfo* s = f.find_tensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    ASSERT_EQ(s->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(s->data, t.data, t.n_bytes), 0) << t.name;
  }
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  for (auto residency : {Residency::kInMemory, Residency::kMapped}) {
    auto a = Model::load(whole, residency), b = Model::load(first, residency);
    EXPECT_EQ(logits_of(*a), logits_of(*b));
  }
}

TEST(SplitGguf, BrokenSetsAreRefused) {
  const Dir d;
  const auto [whole, first] = write_both(d, 3);
  // Opening a later part names the first.
  try {
    GgufFile::open(split_name((d.path / "model").string(), 2, 3));
    FAIL() << "a later part opened";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("open the first part"), std::string::npos) << e.what();
  }
  // A renamed first part cannot find its siblings.
  fs::copy_file(first, d.path / "renamed.gguf");
  EXPECT_THROW(GgufFile::open((d.path / "renamed.gguf").string()), FormatError);
  // A part swapped for another part.
  const std::string third = split_name((d.path / "model").string(), 3, 3);
  fs::copy_file(split_name((d.path / "model").string(), 2, 3), third, fs::copy_options::overwrite_existing);
  EXPECT_THROW(GgufFile::open(first), FormatError);
  // A missing part.
  fs::remove(third);
  EXPECT_THROW(GgufFile::open(first), Error);
}

TEST(SplitGguf, WriterRefusesMorePartsThanTensors) {
  GgufWriter w;
  w.add_f32_tensor("a", {4}, {1, 2, 3, 4});
  EXPECT_THROW(w.split(2), InvalidArgument);
  EXPECT_EQ(w.split(1).size(), 1u);
}

}  // namespace
}  // namespace pagoda
