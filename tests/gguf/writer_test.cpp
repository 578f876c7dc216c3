// GgufWriter::write streams the tensors to the file: the file must hold
// exactly the bytes to_bytes() builds in memory, padding included; a
// produced tensor is made when written, and must have its shape's size.
#include "gguf/writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "gguf/file.h"
#include "util/error.h"

namespace pagoda {
namespace {

TEST(GgufWriter, WriteStreamsTheSameBytesAsToBytes) {
  GgufWriter w(64);
  w.set("general.architecture", Value::string("llama"));
  w.add_f32_tensor("a", {3}, {1, 2, 3});  // 12 bytes: padded to 64
  std::vector<uint8_t> f16(2 * 32 * 2);
  for (size_t i = 0; i < f16.size(); ++i) f16[i] = uint8_t(i * 7);
  w.add_tensor("b", TensorType::F16, {32, 2}, f16);  // 128 bytes: no padding
  w.add_f32_tensor("c", {5}, {5, 4, 3, 2, 1});
  int made = 0;
  w.add_tensor("d", TensorType::F16, {32, 2}, [&] {
    ++made;
    return f16;
  });
  EXPECT_EQ(made, 0);  // not before the file is written

  std::random_device rd;
  const auto path = std::filesystem::temp_directory_path() / ("pagoda-writer-" + std::to_string(rd()) + ".gguf");
  w.write(path.string());
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(written, w.to_bytes());
  EXPECT_EQ(made, 2);
  const auto f = GgufFile::open(path.string());
  ASSERT_NE(f.find_tensor("c"), nullptr);
  EXPECT_EQ(f.find_tensor("c")->n_bytes, 20u);
  ASSERT_NE(f.find_tensor("d"), nullptr);
  EXPECT_EQ(f.find_tensor("d")->n_bytes, f16.size());
  std::filesystem::remove(path);
}

TEST(GgufWriter, AProducedTensorOfAnotherSizeIsRefused) {
  GgufWriter w;
  w.add_tensor("short", TensorType::F32, {4}, [] { return std::vector<uint8_t>(12); });
  EXPECT_THROW(w.to_bytes(), InvalidArgument);
}

}  // namespace
}  // namespace pagoda
