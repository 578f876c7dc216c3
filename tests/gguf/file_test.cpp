#include "gguf/file.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "gguf/writer.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

TEST(GgufFile, ReadsStories260K) {
  auto f = GgufFile::open(testing::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u64("llama.embedding_length"), 64u);
  EXPECT_EQ(f.get_u64("llama.context_length"), 512u);
  EXPECT_EQ(f.tensors().size(), 48u);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->type, TensorType::F32);
  EXPECT_EQ(f.get(std::string("tokenizer.ggml.tokens")).as_array("tokens").size(), 512u);
}

// edit() (model loading rearranges weights through it): a mapped file is
// never written; a file read into memory is, once, and is read-only again
// after, even when the edit throws.
TEST(GgufFile, EditOnlyInMemoryAndOnlyOnce) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  EXPECT_FALSE(GgufFile::open(model, Residency::kMapped).edit([] { FAIL() << "a mapped file was edited"; }));
  auto f = GgufFile::open(model, Residency::kInMemory);
  ASSERT_EQ(f.residency(), Residency::kInMemory);
  auto* first = const_cast<uint8_t*>(f.tensors()[0].data);
  const uint8_t before = *first;
  EXPECT_TRUE(f.edit([&] { *first = uint8_t(before + 1); }));
  EXPECT_EQ(*first, uint8_t(before + 1));
  EXPECT_THROW(f.edit([] {}), InvalidArgument);
  auto g = GgufFile::open(model, Residency::kInMemory);
  EXPECT_THROW(g.edit([] { throw std::runtime_error("half way"); }), std::runtime_error);
  EXPECT_THROW(g.edit([] {}), InvalidArgument);  // once, even after a throw
}

TEST(GgufFile, WriterRoundTripsEveryValueType) {
  GgufWriter w(64);
  w.set("u8", Value::u8(200));
  w.set("i8", Value::i8(-100));
  w.set("u16", Value::u16(60000));
  w.set("i16", Value::i16(-30000));
  w.set("u32", Value::u32(4000000000u));
  w.set("i32", Value::i32(-2000000000));
  w.set("u64", Value::u64(uint64_t(1) << 60));
  w.set("i64", Value::i64(-(int64_t(1) << 60)));
  w.set("f32", Value::f32(1.5f));
  w.set("f64", Value::f64(-2.25));
  w.set("bool", Value::boolean(true));
  w.set("str", Value::string("hé\nllo"));
  w.set("strs", Value::strings({"a", "", "ccc"}));
  w.set("nested", Value::array(ValueType::ARRAY, {Value::i32s({1, 2}), Value::i32s({3})}));
  w.add_f32_tensor("t", {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get_u64("u8"), 200u);
  EXPECT_EQ(f.get("i8").as_i64("i8"), -100);
  EXPECT_EQ(f.get_u64("u16"), 60000u);
  EXPECT_EQ(f.get("i16").as_i64("i16"), -30000);
  EXPECT_EQ(f.get_u64("u32"), 4000000000u);
  EXPECT_EQ(f.get("i32").as_i64("i32"), -2000000000);
  EXPECT_EQ(f.get_u64("u64"), uint64_t(1) << 60);
  EXPECT_EQ(f.get("i64").as_i64("i64"), -(int64_t(1) << 60));
  EXPECT_EQ(f.get_f64("f32"), 1.5);
  EXPECT_EQ(f.get_f64("f64"), -2.25);
  EXPECT_TRUE(f.get_bool("bool"));
  EXPECT_EQ(f.get_string("str"), "hé\nllo");
  const auto& strs = f.get("strs").as_array("strs");
  ASSERT_EQ(strs.size(), 3u);
  EXPECT_EQ(strs[2].as_string("s"), "ccc");
  const auto& nested = f.get("nested").as_array("nested");
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[0].as_array("n")[1].as_i64("n"), 2);
  const TensorInfo* t = f.find_tensor("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_elements, 6u);
  EXPECT_EQ(size_t(t->data - bytes.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(t->data)[5], 6.0f);
  EXPECT_THROW(f.get_u64("str"), FormatError);
  EXPECT_THROW(f.get("i8").as_u64("i8"), FormatError);
  EXPECT_EQ(f.get_u64("absent", 7), 7u);
  EXPECT_THROW(f.get_u64("absent"), FormatError);
}

}  // namespace
}  // namespace pagoda
