// Damaged, truncated and hostile GGUF files: each must give a pagoda::Error
// (a FormatError naming what is wrong), never a crash or an out-of-bounds
// read. Parses run on heap copies of exactly the bytes under test, so an
// overread is caught when the suite runs under ASan. This file also makes the
// fuzzer's seed corpus (see FuzzSeeds below).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t k2p63 = uint64_t(1) << 63;

// Hand-written GGUF bytes, for the files GgufWriter rightly refuses to make.
struct Raw {
  Bytes b;
  template <class T>
  Raw& put(T v) {
    const size_t n = b.size();
    b.resize(n + sizeof(T));
    std::memcpy(b.data() + n, &v, sizeof(T));
    return *this;
  }
  Raw& u8(uint8_t v) { return put(v); }
  Raw& u32(uint32_t v) { return put(v); }
  Raw& u64(uint64_t v) { return put(v); }
  Raw& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& key(const std::string& k, ValueType t) { return str(k).u32(uint32_t(t)); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> dims, TensorType type, uint64_t offset) {
    str(name).u32(uint32_t(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(uint32_t(type)).u64(offset);
  }
  Raw& pad(size_t alignment) {
    b.resize((b.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

void patch_u32(Bytes& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void patch_u64(Bytes& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

// Parses a heap copy of exactly the first n bytes (ASan flags any read past
// them). The copy dies on return, so the result's tensor data pointers dangle:
// callers look only at metadata and shapes.
GgufFile parse_copy(const Bytes& bytes, size_t n) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[n]);
  if (n) std::memcpy(copy.get(), bytes.data(), n);
  GgufFile f = GgufFile::parse(copy.get(), n, "damaged.gguf");
  // Touch everything while the copy is alive, so a bad pointer or value shows up here.
  for (const auto& [k, v] : f.metadata()) (void)v.to_display();
  for (const auto& t : f.tensors()) {
    volatile uint8_t first = t.data[0], last = t.data[t.n_bytes - 1];
    (void)first, (void)last;
  }
  return f;
}
GgufFile parse_copy(const Bytes& bytes) { return parse_copy(bytes, bytes.size()); }

// The FormatError message for bytes, or "" (and a test failure) if they parse.
std::string parse_error(const Bytes& bytes) {
  try {
    parse_copy(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "a damaged file parsed without error";
  return "";
}

void expect_format_error(const Bytes& bytes, const std::string& expected) {
  const std::string msg = parse_error(bytes);
  EXPECT_NE(msg.find(expected), std::string::npos) << "message: " << msg << "\nshould mention: " << expected;
}
#define EXPECT_FORMAT_ERROR(bytes, expected) \
  do {                                       \
    SCOPED_TRACE(expected);                  \
    expect_format_error(bytes, expected);    \
  } while (0)

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(seed + i * 7);
  return b;
}

// A valid v3 file with every value type, nested arrays and three tensors of
// different types. The last tensor is 32 bytes, so its data ends exactly at
// the end of the file and every truncation cuts something that is needed.
Bytes valid_file() {
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
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
  w.set("tokens", Value::strings({"<s>", "", "hello"}));
  w.set("scores", Value::f32s({0.0f, -1.0f, 2.5f}));
  w.set("nested", Value::array(ValueType::ARRAY, {Value::i32s({1, 2}), Value::array(ValueType::I32, {}),
                                                  Value::array(ValueType::ARRAY, {Value::strings({"x"})})}));
  w.add_tensor("f16", TensorType::F16, {3, 5}, pattern(30, 1));
  w.add_tensor("q8_0", TensorType::Q8_0, {32, 2}, pattern(2 * 34, 2));
  w.add_tensor("f32", TensorType::F32, {4, 2}, pattern(32, 3));
  return w.to_bytes();
}

// Header (24 bytes) then one key/value whose value the caller appends.
Raw one_kv(const std::string& key, ValueType t) { return std::move(Raw().header(0, 1).key(key, t)); }

// One F32 tensor of `dims` at `offset`, with `data_bytes` bytes of data.
Bytes one_tensor(std::vector<uint64_t> dims, uint64_t offset, size_t data_bytes, TensorType type = TensorType::F32) {
  Raw r;
  r.header(1, 0).tensor("t", std::move(dims), type, offset).pad(32).zeros(data_bytes);
  return r.b;
}

TEST(GgufDamaged, ValidFileParses) {
  const Bytes bytes = valid_file();
  GgufFile f = parse_copy(bytes);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 15u);
  EXPECT_EQ(f.get("i16").as_i64("i16"), -30000);
  EXPECT_EQ(f.get("nested").as_array("n")[2].as_array("n")[0].as_array("n")[0].as_string("n"), "x");
  ASSERT_EQ(f.tensors().size(), 3u);
  const uint8_t* const end = bytes.data() + bytes.size();
  GgufFile g = GgufFile::parse(bytes.data(), bytes.size());
  for (uint8_t i = 0; i < 3; ++i) {
    const TensorInfo& t = g.tensors()[i];
    EXPECT_EQ(Bytes(t.data, t.data + t.n_bytes), pattern(t.n_bytes, uint8_t(i + 1))) << t.name;
  }
  EXPECT_EQ(g.tensors()[1].n_bytes, 68u);
  EXPECT_EQ(g.tensors()[2].data + 32, end) << "the last tensor should end the file";
}

TEST(GgufDamaged, EveryTruncationIsAFormatError) {
  const Bytes bytes = valid_file();
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_THROW(parse_copy(bytes, n), FormatError) << "length " << n;
  // The header and the data section each say what was cut.
  EXPECT_FORMAT_ERROR(Bytes(bytes.begin(), bytes.begin() + 6), "version");
  EXPECT_FORMAT_ERROR(Bytes(bytes.begin(), bytes.begin() + 20), "metadata count");
  EXPECT_FORMAT_ERROR(Bytes(bytes.begin(), bytes.end() - 1), "runs past the end");
}

TEST(GgufDamaged, BadMagic) {
  for (const char* magic : {"GGML", "gguf", "FUGG", "GGU\0"}) {
    Bytes b = valid_file();
    std::memcpy(b.data(), magic, 4);
    EXPECT_FORMAT_ERROR(b, "bad magic");
  }
  EXPECT_FORMAT_ERROR(Bytes{}, "bad magic");
  EXPECT_FORMAT_ERROR(Bytes({'G', 'G', 'U'}), "bad magic");
}

TEST(GgufDamaged, OnlyVersions2And3AreAccepted) {
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u /* big-endian v3 */, 0xFFFFFFFFu}) {
    Bytes b = valid_file();
    patch_u32(b, 4, v);
    EXPECT_FORMAT_ERROR(b, fmt::format("version {} is not supported", v));
  }
  Bytes b = valid_file();
  patch_u32(b, 4, 2);  // v3 only added big-endian files; a little-endian v2 file reads the same
  EXPECT_EQ(parse_copy(b).version(), 2u);
  EXPECT_EQ(parse_copy(b).tensors().size(), 3u);
}

TEST(GgufDamaged, AbsurdCounts) {
  for (uint64_t n : {k2p63, kU64Max, uint64_t(1) << 32}) {
    Bytes b = valid_file();
    patch_u64(b, 8, n);
    EXPECT_FORMAT_ERROR(b, "tensor count");
    b = valid_file();
    patch_u64(b, 16, n);
    EXPECT_FORMAT_ERROR(b, "metadata count");
  }
  // Counts that pass the size bound but overshoot what is there.
  Bytes b = valid_file();
  patch_u64(b, 8, 4);
  EXPECT_THROW(parse_copy(b), FormatError);
  b = valid_file();
  patch_u64(b, 16, 16);
  EXPECT_THROW(parse_copy(b), FormatError);
}

TEST(GgufDamaged, AbsurdStringLengths) {
  for (uint64_t len : {k2p63, kU64Max, uint64_t(10000)}) {
    Bytes b = valid_file();
    patch_u64(b, 24, len);  // length of the first key
    EXPECT_FORMAT_ERROR(b, "metadata key");
    EXPECT_FORMAT_ERROR(one_kv("s", ValueType::STRING).u64(len).u64(0).b, "string value");
    EXPECT_FORMAT_ERROR(Raw().header(1, 0).u64(len).zeros(64).b, "tensor name");
  }
  // One byte short of the file.
  EXPECT_FORMAT_ERROR(one_kv("s", ValueType::STRING).u64(4).u8('a').u8('b').u8('c').b, "runs past the end");
}

TEST(GgufDamaged, AbsurdArrayLengths) {
  for (ValueType et : {ValueType::U8, ValueType::U64, ValueType::STRING, ValueType::ARRAY}) {
    for (uint64_t n : {k2p63, kU64Max, uint64_t(1) << 40}) {
      SCOPED_TRACE(value_type_name(et));
      EXPECT_FORMAT_ERROR(one_kv("a", ValueType::ARRAY).u32(uint32_t(et)).u64(n).zeros(64).b, "cannot fit");
    }
  }
  // 9 one-byte elements declared, 8 present.
  EXPECT_FORMAT_ERROR(one_kv("a", ValueType::ARRAY).u32(uint32_t(ValueType::U8)).u64(9).u64(0).b, "cannot fit");
  // A nested array too long for what is left.
  EXPECT_THROW(parse_copy(one_kv("a", ValueType::ARRAY)
                              .u32(uint32_t(ValueType::ARRAY))
                              .u64(1)
                              .u32(uint32_t(ValueType::U32))
                              .u64(k2p63)
                              .zeros(16)
                              .b),
               FormatError);
}

TEST(GgufDamaged, UnknownValueTypes) {
  for (uint32_t t : {13u, 100u, 0xFFFFFFFFu}) {
    EXPECT_FORMAT_ERROR(Raw().header(0, 1).str("k").u32(t).u64(0).b, fmt::format("unknown value type {}", t));
    EXPECT_FORMAT_ERROR(one_kv("k", ValueType::ARRAY).u32(t).u64(0).b, fmt::format("unknown array element type {}", t));
  }
  Bytes b = valid_file();
  patch_u32(b, 24 + 8 + std::strlen("general.architecture"), 13);
  EXPECT_FORMAT_ERROR(b, "'general.architecture' has unknown value type 13");
}

TEST(GgufDamaged, UnknownTensorType) {
  for (uint32_t t : {4u, 5u, 1000u, 0xFFFFFFFFu}) {
    Raw r;
    r.header(1, 0).str("w").u32(1).u64(32).u32(t).u64(0).pad(32).zeros(128);
    EXPECT_FORMAT_ERROR(r.b, fmt::format("unknown type id {}", t));
  }
}

TEST(GgufDamaged, BadDimensions) {
  EXPECT_FORMAT_ERROR(one_tensor({}, 0, 64), "has 0 dimensions");
  EXPECT_FORMAT_ERROR(one_tensor({1, 1, 1, 1, 1}, 0, 64), "has 5 dimensions");
  EXPECT_FORMAT_ERROR(Raw().header(1, 0).str("t").u32(0xFFFFFFFF).zeros(64).b, "dimensions");
  EXPECT_FORMAT_ERROR(one_tensor({0}, 0, 64), "dimension 0");
  EXPECT_FORMAT_ERROR(one_tensor({4, 0, 2}, 0, 64), "dimension 0");
  // 1 to 4 dimensions are fine.
  EXPECT_EQ(parse_copy(one_tensor({1, 2, 2, 2}, 0, 32)).tensors()[0].n_elements, 8u);
  // Rows of a block type must hold whole blocks.
  EXPECT_FORMAT_ERROR(one_tensor({31, 2}, 0, 128, TensorType::Q8_0), "not a multiple");
}

// The block types added with their kernels (Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K,
// IQ4_XS, and MXFP4 with its odd 17-byte blocks): a whole block parses with
// its size; a row that is not whole blocks, or data one block short, is
// refused with a FormatError.
TEST(GgufDamaged, NewBlockTypesCheckTheirSizes) {
  for (TensorType t : {TensorType::Q5_1, TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K, TensorType::Q5_K,
                       TensorType::IQ4_XS, TensorType::MXFP4}) {
    SCOPED_TRACE(std::string(tensor_type_name(t)));
    const auto info = *tensor_type_info(uint32_t(t));
    const size_t bytes = (2 * info.block_bytes + 31) / 32 * 32;
    const GgufFile f = parse_copy(one_tensor({info.block_elems, 2}, 0, bytes, t));
    EXPECT_EQ(f.tensors()[0].n_bytes, 2u * info.block_bytes);
    EXPECT_FORMAT_ERROR(one_tensor({info.block_elems + 16, 2}, 0, 2 * bytes, t), "not a multiple");
    EXPECT_FORMAT_ERROR(one_tensor({info.block_elems, 2}, 0, info.block_bytes, t), "runs past the end");
  }
}

TEST(GgufDamaged, DimensionProductsThatOverflow) {
  const uint64_t k2p32 = uint64_t(1) << 32;
  for (const auto& dims : std::vector<std::vector<uint64_t>>{
           {kU64Max}, {k2p63}, {k2p32, k2p32}, {k2p32, k2p32, 2}, {65536, 65536, 65536, 65536}, {3, kU64Max / 2}}) {
    EXPECT_FORMAT_ERROR(one_tensor(dims, 0, 64), "absurd dimension");
  }
  // Large but representable: only the data size gives it away.
  EXPECT_FORMAT_ERROR(one_tensor({uint64_t(1) << 20, uint64_t(1) << 20}, 0, 64), "runs past the end");
}

TEST(GgufDamaged, TensorDataOutOfBounds) {
  EXPECT_EQ(parse_copy(one_tensor({16}, 32, 96)).tensors()[0].n_bytes, 64u);  // fits exactly
  EXPECT_FORMAT_ERROR(one_tensor({16}, 64, 96), "runs past the end");         // one block too far
  EXPECT_FORMAT_ERROR(one_tensor({17}, 32, 96), "runs past the end");         // 4 bytes too long
  EXPECT_FORMAT_ERROR(one_tensor({1}, uint64_t(1) << 20, 64), "runs past the end");
  EXPECT_FORMAT_ERROR(one_tensor({1}, k2p63, 64), "runs past the end");
  // offset + size wraps around uint64 to a small number.
  EXPECT_FORMAT_ERROR(one_tensor({16}, kU64Max - 31, 64), "runs past the end");
  EXPECT_FORMAT_ERROR(one_tensor({8, 8}, kU64Max - 31 - 224, 256), "runs past the end");
  // The data section itself is missing: the file ends inside the padding.
  Raw r;
  r.header(1, 0).tensor("t", {1}, TensorType::F32, 0);
  EXPECT_FORMAT_ERROR(r.b, "runs past the end");
}

TEST(GgufDamaged, MisalignedOffset) {
  EXPECT_FORMAT_ERROR(one_tensor({1}, 1, 64), "offset 1 is not aligned");
  EXPECT_FORMAT_ERROR(one_tensor({1}, 16, 64), "not aligned");
  EXPECT_FORMAT_ERROR(one_tensor({1}, kU64Max, 64), "not aligned");
  // Against a custom alignment.
  Raw r;
  r.header(1, 1).key("general.alignment", ValueType::U32).u32(64);
  r.tensor("t", {1}, TensorType::F32, 32).pad(64).zeros(128);
  EXPECT_FORMAT_ERROR(r.b, "offset 32 is not aligned");
}

TEST(GgufDamaged, Duplicates) {
  Raw t;
  t.header(2, 0).tensor("w", {8}, TensorType::F32, 0).tensor("w", {8}, TensorType::F32, 32).pad(32).zeros(64);
  EXPECT_FORMAT_ERROR(t.b, "duplicate tensor 'w'");
  Raw k;
  k.header(0, 2).key("k", ValueType::U8).u8(1).key("k", ValueType::U32).u32(2);
  EXPECT_FORMAT_ERROR(k.b, "duplicate metadata key 'k'");
}

TEST(GgufDamaged, BadAlignment) {
  auto with_alignment = [](ValueType t, uint64_t v) {
    Raw r = one_kv("general.alignment", t);
    if (t == ValueType::U64)
      r.u64(v);
    else
      r.u32(uint32_t(v));
    return r.b;
  };
  for (uint64_t a : {0u, 3u, 48u, 33u, 1u << 21})
    EXPECT_FORMAT_ERROR(with_alignment(ValueType::U32, a),
                        fmt::format("general.alignment {} is not a power of two", a));
  EXPECT_FORMAT_ERROR(with_alignment(ValueType::U64, uint64_t(1) << 32), "general.alignment");
  EXPECT_FORMAT_ERROR(with_alignment(ValueType::I32, uint32_t(-32)), "general.alignment");
  EXPECT_FORMAT_ERROR(with_alignment(ValueType::F32, 0x42000000 /* 32.0f */), "general.alignment");
  EXPECT_FORMAT_ERROR(one_kv("general.alignment", ValueType::STRING).str("32").b, "general.alignment");
  EXPECT_EQ(parse_copy(with_alignment(ValueType::U64, 256)).alignment(), 256u);
}

TEST(GgufDamaged, WriterAlignmentsParse) {
  for (uint32_t a : {1u, 8u, 32u, 64u, 4096u}) {
    GgufWriter w(a);
    w.add_tensor("a", TensorType::F16, {3}, pattern(6, 9));
    w.add_f32_tensor("b", {2}, {1.0f, 2.0f});
    const Bytes bytes = w.to_bytes();
    GgufFile f = parse_copy(bytes);
    EXPECT_EQ(f.alignment(), a);
    GgufFile g = GgufFile::parse(bytes.data(), bytes.size());
    for (const auto& t : g.tensors()) EXPECT_EQ(size_t(t.data - bytes.data()) % a, 0u) << a << " " << t.name;
    float b1;  // memcpy: with alignment 1 the floats are not 4-byte aligned
    std::memcpy(&b1, g.find_tensor("b")->data + 4, 4);
    EXPECT_EQ(b1, 2.0f);
  }
}

TEST(GgufDamaged, BoolOtherThan0Or1) {
  EXPECT_FORMAT_ERROR(one_kv("b", ValueType::BOOL).u8(2).b, "bool value 2");
  EXPECT_FORMAT_ERROR(one_kv("b", ValueType::ARRAY).u32(uint32_t(ValueType::BOOL)).u64(3).u8(1).u8(0).u8(255).b,
                      "bool value 255");
  EXPECT_FALSE(parse_copy(one_kv("b", ValueType::BOOL).u8(0).b).get_bool("b"));
}

// A key holding `depth` arrays nested inside one another around one uint8.
Bytes nested_arrays(int depth) {
  Raw r = one_kv("n", ValueType::ARRAY);
  for (int level = 1; level < depth; ++level) r.u32(uint32_t(ValueType::ARRAY)).u64(1);
  r.u32(uint32_t(ValueType::U8)).u64(1).u8(42);
  return r.b;
}

TEST(GgufDamaged, NestedArrayDepthLimit) {
  GgufFile f = parse_copy(nested_arrays(4));
  const Value* v = &f.get("n");
  for (int level = 0; level < 4; ++level) v = &v->as_array("n").at(0);
  EXPECT_EQ(v->as_u64("n"), 42u);
  EXPECT_FORMAT_ERROR(nested_arrays(5), "nested too deeply");
  EXPECT_FORMAT_ERROR(nested_arrays(100000), "nested too deeply");  // and no stack overflow
}

// Applies 1 to 4 random damages: a random byte, a flipped bit, or an
// interesting 32/64-bit value (0, all ones, 2^63, ...) written over a field.
Bytes mutate(Bytes b, std::mt19937_64& rng) {
  static const uint64_t kInteresting[] = {0, 1, 2, 5, 13, 0xFF, 0xFFFFFFFF, k2p63, kU64Max, kU64Max - 31};
  const int n = int(rng() % 4) + 1;
  for (int i = 0; i < n; ++i) {
    const size_t at = rng() % b.size();
    switch (rng() % 4) {
      case 0: b[at] = uint8_t(rng()); break;
      case 1: b[at] ^= uint8_t(1u << (rng() % 8)); break;
      case 2:
        if (at + 4 <= b.size()) patch_u32(b, at, uint32_t(kInteresting[rng() % std::size(kInteresting)]));
        break;
      case 3:
        if (at + 8 <= b.size()) patch_u64(b, at, kInteresting[rng() % std::size(kInteresting)]);
        break;
    }
  }
  if (rng() % 8 == 0) b.resize(rng() % b.size());  // and sometimes a truncation
  return b;
}

TEST(GgufDamaged, RandomDamageParsesOrThrowsError) {
  const Bytes valid = valid_file();
  std::mt19937_64 rng(20240611);
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    const Bytes b = mutate(valid, rng);
    try {
      parse_copy(b);
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " threw a non-pagoda exception: " << e.what();
    }
  }
  // Both outcomes must happen, or the mutations are not exercising the parser.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 100);
}

// Unique scratch directory for the on-disk tests, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           fmt::format("pagoda-damaged-{}-{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                       std::random_device()());
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// The message of the pagoda::Error that opening path throws.
std::string open_error(const std::string& path) {
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "opened " << path << " without error";
  return "";
}

TEST(GgufDamaged, OpenNamesThePath) {
  TempDir dir;
  const std::string missing = (dir.path / "missing.gguf").string();
  EXPECT_NE(open_error(missing).find(missing), std::string::npos) << open_error(missing);
  EXPECT_NE(open_error(dir.path.string()).find(dir.path.string()), std::string::npos);

  const std::string empty = (dir.path / "empty.gguf").string();
  write_bytes(empty, {});
  EXPECT_THROW(GgufFile::open(empty), FormatError);
  EXPECT_NE(open_error(empty).find(empty), std::string::npos);

  const Bytes valid = valid_file();
  const std::string cut = (dir.path / "cut.gguf").string();
  write_bytes(cut, Bytes(valid.begin(), valid.end() - 1));
  EXPECT_THROW(GgufFile::open(cut), FormatError);
  EXPECT_NE(open_error(cut).find(cut), std::string::npos);

  const std::string whole = (dir.path / "whole.gguf").string();
  write_bytes(whole, valid);
  EXPECT_EQ(GgufFile::open(whole).tensors().size(), 3u);
}

TEST(GgufDamaged, MetadataValueLimit) {
  // 2^24 + 1 one-byte elements fit in the file but exceed the metadata value budget.
  const uint64_t n = (uint64_t(1) << 24) + 1;
  EXPECT_FORMAT_ERROR(one_kv("a", ValueType::ARRAY).u32(uint32_t(ValueType::U8)).u64(n).zeros(n).b,
                      "exceeds the limit");
}

// A flipped bit in a count of a big model file: the count fits in the file's
// size but not in memory. Sparse files, so they cost no disk. The parser used
// to reserve memory for the claimed count and threw std::bad_alloc.
TEST(GgufDamaged, HugeCountsInBigSparseFiles) {
  TempDir dir;
  auto sparse = [&](const std::string& name, const Bytes& head, uint64_t size) {
    const std::string path = (dir.path / name).string();
    write_bytes(path, head);
    std::filesystem::resize_file(path, size);
    return path;
  };
  const uint64_t k2GiB = uint64_t(1) << 31, k16GiB = uint64_t(1) << 34;
  // A uint8 array as long as the file: 2^31 Values would take 96 GiB.
  const std::string array = sparse(
      "array.gguf", one_kv("tokenizer.ggml.precompiled_charsmap", ValueType::ARRAY).u32(0).u64(k2GiB - 100).b, k2GiB);
  EXPECT_THROW(GgufFile::open(array), FormatError);
  EXPECT_NE(open_error(array).find("exceeds the limit"), std::string::npos) << open_error(array);
  // 2^29 - 1 tensor infos (each at least 32 bytes of file) would take 48 GiB.
  const std::string tensors = sparse("tensors.gguf", Raw().header((uint64_t(1) << 29) - 1, 0).b, k16GiB);
  EXPECT_THROW(GgufFile::open(tensors), FormatError);
  EXPECT_NE(open_error(tensors).find("dimensions"), std::string::npos) << open_error(tensors);
}

// The libFuzzer seed corpus (fuzz/corpus/gguf_parse): small valid files that reach
// every part of the parser. Regenerate it with
//   PAGODA_WRITE_FUZZ_SEEDS=fuzz/corpus/gguf_parse build-*/pagoda_gguf_tests --gtest_filter='FuzzSeeds.*'
// (no .gguf suffix: .gitignore drops *.gguf).
std::vector<std::pair<std::string, Bytes>> fuzz_seeds() {
  std::vector<std::pair<std::string, Bytes>> seeds;
  seeds.emplace_back("empty-v3", Raw().header(0, 0).b);
  seeds.emplace_back("all-types", valid_file());
  GgufWriter w(64);
  w.set("general.architecture", Value::string("llama"));
  w.set("tokenizer.ggml.tokens", Value::strings({"<unk>", "<s>", "</s>", "a", "b"}));
  w.set("tokenizer.ggml.token_type", Value::i32s({2, 3, 3, 1, 1}));
  w.add_tensor("token_embd.weight", TensorType::Q8_0, {32, 1}, pattern(34, 5));
  w.add_tensor("blk.0.attn_norm.weight", TensorType::BF16, {4, 1, 1, 2}, pattern(16, 6));
  w.add_tensor("output.weight", TensorType::Q4_K, {256}, pattern(144, 7));
  seeds.emplace_back("align64-tokenizer", w.to_bytes());
  seeds.emplace_back("nested-depth4", nested_arrays(4));
  return seeds;
}

TEST(FuzzSeeds, AreSmallAndValid) {
  const char* out = std::getenv("PAGODA_WRITE_FUZZ_SEEDS");
  for (const auto& [name, bytes] : fuzz_seeds()) {
    EXPECT_LT(bytes.size(), 4096u) << name;
    EXPECT_NO_THROW(parse_copy(bytes)) << name;
    if (out && *out) write_bytes(std::string(out) + "/" + name, bytes);
  }
}

}  // namespace
}  // namespace pagoda
