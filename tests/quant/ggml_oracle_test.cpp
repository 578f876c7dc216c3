// Every weight format against ggml's own code (llama.cpp v0.5.0's prebuilt
// libggml-base.so, loaded with dlopen: testing/llama_cpp_libs.h): Pagoda's
// decoder equals ggml's to_float bit for bit on random and edge-case blocks;
// blocks ggml quantizes decode identically in Pagoda; blocks Pagoda encodes
// decode identically in ggml. One table drives every format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/types.h"
#include "quant/blocks.h"
#include "quant/rows.h"
#include "testing/ggml_api.h"
#include "testing/llama_cpp_libs.h"
#include "testing/npm_oracle.h"
#include "util/half.h"

namespace pagoda {
namespace {

namespace ggml = testing::ggml;

// A format and where its F16 scale fields lie in a block (random bytes there
// would often be Inf or NaN, which no quantizer writes).
struct Format {
  TensorType type;
  std::vector<size_t> halves;  // byte offsets of the F16 fields
};

const std::vector<Format>& formats() {
  static const std::vector<Format> all = {
      {TensorType::F16, {}},
      {TensorType::BF16, {}},
      {TensorType::Q8_0, {offsetof(BlockQ8_0, d)}},
      {TensorType::Q4_0, {offsetof(BlockQ4_0, d)}},
      {TensorType::Q5_0, {offsetof(BlockQ5_0, d)}},
      {TensorType::Q5_1, {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)}},
      {TensorType::IQ4_NL, {offsetof(BlockIQ4_NL, d)}},
      {TensorType::MXFP4, {}},  // its E8M0 scale byte is random too: every value is finite
      {TensorType::Q2_K, {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}},
      {TensorType::Q3_K, {offsetof(BlockQ3_K, d)}},
      {TensorType::Q4_K, {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}},
      {TensorType::Q5_K, {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}},
      {TensorType::Q6_K, {offsetof(BlockQ6_K, d)}},
      {TensorType::IQ4_XS, {offsetof(BlockIQ4_XS, d)}},
  };
  return all;
}

// The oracle, or null when the npm package is missing (the test then skips).
struct Ggml {
  ggml::GetTypeTraits* traits;
  ggml::QuantizeChunk* quantize_chunk;
  ggml::QuantizeRequiresImatrix* requires_imatrix;
};

Ggml open_ggml() {
  const auto lib = testing::SharedLibrary::open("libggml-base.so");
  return {lib.function<ggml::GetTypeTraits>("ggml_get_type_traits"),
          lib.function<ggml::QuantizeChunk>("ggml_quantize_chunk"),
          lib.function<ggml::QuantizeRequiresImatrix>("ggml_quantize_requires_imatrix")};
}

// An F16 bit pattern that is finite: any sign, zero, subnormal, the largest
// (65504) and the smallest normal values included.
uint16_t finite_half(std::mt19937& rng) {
  static const uint16_t kEdges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00};
  if (rng() % 4 == 0) return kEdges[rng() % std::size(kEdges)];
  uint16_t h;
  do h = uint16_t(rng());
  while ((h & 0x7C00) == 0x7C00);  // exponent all ones: Inf or NaN
  return h;
}

// Blocks of t: random bytes, F16 fields finite. `fill` >= 0 sets every other
// byte to that value (all-zero, all-max and every bit pattern of the codes).
std::vector<uint8_t> blocks(const Format& f, size_t n_blocks, int fill, std::mt19937& rng) {
  const size_t bb = row_bytes(f.type, block_elems(f.type));
  std::vector<uint8_t> w(n_blocks * bb);
  for (auto& b : w) b = fill >= 0 ? uint8_t(fill) : uint8_t(rng());
  if (f.type == TensorType::F16)
    for (size_t i = 0; i < w.size(); i += 2) {
      const uint16_t h = finite_half(rng);
      std::memcpy(&w[i], &h, 2);
    }
  if (f.type == TensorType::BF16)
    for (size_t i = 0; i < w.size(); i += 2)
      if ((w[i + 1] & 0x7F) == 0x7F && (w[i] & 0x80)) w[i + 1] &= 0xBF;  // exponent all ones: clear a bit
  for (size_t b = 0; b < n_blocks; ++b)
    for (size_t at : f.halves) {
      const uint16_t h = finite_half(rng);
      std::memcpy(&w[b * bb + at], &h, 2);
    }
  return w;
}

// Pagoda's decoding of `w` equals ggml's, bit for bit (NaN excepted, none
// arises from finite scales).
void expect_same_decoding(const Ggml& g, const Format& f, const std::vector<uint8_t>& w, const char* what) {
  const size_t n = w.size() / row_bytes(f.type, block_elems(f.type)) * block_elems(f.type);
  std::vector<float> ours(n), theirs(n);
  dequantize_row(f.type, w.data(), ours.data(), n);
  g.traits(ggml::Type(f.type))->to_float(w.data(), theirs.data(), int64_t(n));
  for (size_t i = 0; i < n; ++i) {
    uint32_t a, b;
    std::memcpy(&a, &ours[i], 4);
    std::memcpy(&b, &theirs[i], 4);
    ASSERT_EQ(a, b) << what << " " << tensor_type_name(f.type) << " element " << i << ": " << ours[i] << " vs "
                    << theirs[i];
  }
}

// Sanitizer builds load these uninstrumented libraries into an instrumented
// process; ggml's own allocations then look like leaks or bad frees.
#if defined(__SANITIZE_ADDRESS__)
#define PAGODA_SKIP_UNDER_SANITIZERS() \
  GTEST_SKIP() << "the oracle libraries are not built for AddressSanitizer; the Release build runs this test"
#else
#define PAGODA_SKIP_UNDER_SANITIZERS() (void)0
#endif

TEST(GgmlOracle, TypeTraitsAgreeOnLayout) {
  PAGODA_SKIP_UNDER_SANITIZERS();
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const Ggml g = open_ggml();
  for (const Format& f : formats()) {
    const ggml::TypeTraits* t = g.traits(ggml::Type(f.type));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(tensor_type_from_name(t->type_name), f.type) << t->type_name;  // ggml writes "q4_K", "iq4_nl"
    EXPECT_EQ(size_t(t->blck_size), block_elems(f.type));
    EXPECT_EQ(t->type_size, row_bytes(f.type, block_elems(f.type)));
    EXPECT_TRUE(weight_type_supported(f.type)) << tensor_type_name(f.type);
  }
}

TEST(GgmlOracle, DecodingMatchesToFloatBitForBit) {
  PAGODA_SKIP_UNDER_SANITIZERS();
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const Ggml g = open_ggml();
  std::mt19937 rng(7);
  for (const Format& f : formats()) {
    expect_same_decoding(g, f, blocks(f, 512, -1, rng), "random");
    // Every byte value in every code byte: all-zero and all-max quants, each
    // nibble and bit pattern, with random finite scales.
    for (int fill = 0; fill < 256; ++fill) expect_same_decoding(g, f, blocks(f, 2, fill, rng), "filled");
  }
}

// ggml quantizes Gaussian rows (with outliers and a constant row); Pagoda
// decodes its blocks as ggml does. Then the other way: Pagoda's blocks decode
// in ggml as in Pagoda, and are ggml's own bytes where Pagoda rounds as ggml.
TEST(GgmlOracle, QuantizedBlocksRoundTripBothWays) {
  PAGODA_SKIP_UNDER_SANITIZERS();
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const Ggml g = open_ggml();
  std::mt19937 rng(11);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  constexpr int kRows = 4;
  constexpr size_t kCols = 1024;
  std::vector<float> x(kRows * kCols);
  for (auto& v : x) v = gauss(rng) * 0.02f;
  for (size_t i = 0; i < kCols; i += 97) x[i] = 1.5f;       // outliers in row 0
  for (size_t i = 0; i < kCols; ++i) x[kCols + i] = 0.25f;  // a constant row
  for (const Format& f : formats()) {
    SCOPED_TRACE(tensor_type_name(f.type));
    if (g.requires_imatrix(ggml::Type(f.type))) continue;
    const size_t rb = row_bytes(f.type, kCols);
    std::vector<uint8_t> theirs(kRows * rb);
    ASSERT_EQ(g.quantize_chunk(ggml::Type(f.type), x.data(), theirs.data(), 0, kRows, kCols, nullptr), theirs.size());
    expect_same_decoding(g, f, theirs, "ggml-quantized");
    std::vector<uint8_t> ours(kRows * rb);
    for (int r = 0; r < kRows; ++r) quantize_row(f.type, x.data() + r * kCols, ours.data() + r * rb, kCols);
    expect_same_decoding(g, f, ours, "pagoda-quantized");
    // The float formats and Q8_0, Q4_0, Q5_0, Q5_1, MXFP4 round as ggml's
    // reference quantizers: the very same bytes (IQ4_NL and the K-quants
    // search their own way).
    if (block_elems(f.type) != 256 && f.type != TensorType::IQ4_NL) {
      EXPECT_EQ(ours, theirs);
    }
    // Our encoder's error stays near ggml's (same format, own search).
    std::vector<float> a(x.size()), b(x.size());
    dequantize_row(f.type, ours.data(), a.data(), x.size());
    dequantize_row(f.type, theirs.data(), b.data(), x.size());
    double ea = 0, eb = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ea += double(a[i] - x[i]) * double(a[i] - x[i]);
      eb += double(b[i] - x[i]) * double(b[i] - x[i]);
    }
    EXPECT_LE(std::sqrt(ea), 1.35 * std::sqrt(eb) + 1e-12) << "ours " << std::sqrt(ea) << " ggml " << std::sqrt(eb);
    if (std::getenv("PAGODA_PRINT_ERRORS"))
      std::printf("%s rms error: ours %.3g, ggml %.3g\n", std::string(tensor_type_name(f.type)).c_str(),
                  std::sqrt(ea / double(x.size())), std::sqrt(eb / double(x.size())));
  }
}

// MXFP4's exponent is floor(log2 amax) - 2 + 127: blocks whose largest
// element is a power of two, or a float either side of one, across the
// exponent range ggml defines (amax >= 2^-125; below, its cast to a byte is
// undefined), and blocks with zeros, subnormals and both signs, are ggml's
// own bytes.
TEST(GgmlOracle, Mxfp4ExponentEdgesAreGgmlsBytes) {
  PAGODA_SKIP_UNDER_SANITIZERS();
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const Ggml g = open_ggml();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> x;
  for (int k = -125; k <= 127; ++k)
    for (float amax : {std::ldexp(1.0f, k), std::nextafter(std::ldexp(1.0f, k), 0.0f),
                       std::nextafter(std::ldexp(1.0f, k), INFINITY)}) {
      if (!(amax >= std::ldexp(1.0f, -125)) || std::isinf(amax)) continue;
      const size_t at = x.size();
      for (int i = 0; i < kQK; ++i) x.push_back(amax * unit(rng));
      x[at + rng() % kQK] = rng() % 2 ? amax : -amax;
      x[at + rng() % kQK] = 0.0f;
      x[at + rng() % kQK] = std::ldexp(1.0f, -140);  // subnormal
    }
  const size_t n = x.size();
  std::vector<uint8_t> theirs(row_bytes(TensorType::MXFP4, n));
  ASSERT_EQ(g.quantize_chunk(ggml::Type(TensorType::MXFP4), x.data(), theirs.data(), 0, 1, int64_t(n), nullptr),
            theirs.size());
  EXPECT_EQ(quantize(TensorType::MXFP4, x.data(), n), theirs);
  const Format f{TensorType::MXFP4, {}};
  expect_same_decoding(g, f, theirs, "edge exponents");
}

}  // namespace
}  // namespace pagoda
