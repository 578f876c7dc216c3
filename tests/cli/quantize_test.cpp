// `pagoda quantize` end to end on stories260K: the files it writes load and
// generate, carry the expected tensor types and file type, and Q8_0 keeps
// F32's greedy output; bad input gets a one-line error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "testing/build_paths.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using testing::run_process;
namespace fs = std::filesystem;

std::string model() { return testing::shared_path("models/stories260K.gguf"); }

// A fresh folder for one test's files, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("pagoda-quantize-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::vector<int> greedy(const std::string& path, int n) {
  const auto p = run_process({PAGODA_BINARY, "generate", "-m", path, "-p", "Once upon a time", "-n", std::to_string(n),
                              "--temperature", "0", "--json"});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  if (p.exit_code != 0) return {};
  return nlohmann::json::parse(p.out)["output_token_ids"].get<std::vector<int>>();
}

size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// stories260K is 64 wide with a 172-wide FFN, so the rules of
// tools/quantize_model.h give: norms F32 (11), ffn_down F16 (172 is not a
// multiple of 32), and for Q4_K (no row is a multiple of 256) Q5_0 in place
// of Q4_K and Q8_0 in place of Q6_K (output, attn_v of layers 2 and 4).
TEST(CliQuantize, WritesLoadableFilesOfEachType) {
  TempDir dir;
  const auto reference = greedy(model(), 20);
  ASSERT_EQ(reference.size(), 20u);
  const struct {
    const char* type;
    const char* types_line;
    int file_type;
  } cases[] = {
      {"Q8_0", "weight types:    F16 x5, F32 x11, Q8_0 x32", 7},
      {"q4_0", "weight types:    F16 x5, F32 x11, Q4_0 x32", 2},
      {"Q4_K", "weight types:    F16 x5, F32 x11, Q5_0 x29, Q8_0 x3", 15},
      {"Q5_1", "weight types:    F16 x5, F32 x11, Q5_1 x32", 9},
      {"iq4_nl", "weight types:    F16 x5, F32 x11, IQ4_NL x32", 25},
      {"mxfp4", "weight types:    F16 x5, F32 x11, MXFP4 x32", 38},
      {"Q3_K", "weight types:    F16 x5, F32 x11, Q8_0 x32", 11},  // 64-wide rows: Q3_K falls back to Q8_0
      {"q6_k", "weight types:    F16 x5, F32 x11, Q8_0 x32", 18},  // and so does Q6_K
  };
  for (const auto& c : cases) {
    const std::string out = dir.file(std::string(c.type) + ".gguf");
    auto p = run_process({PAGODA_BINARY, "quantize", model(), out, c.type});
    ASSERT_EQ(p.exit_code, 0) << c.type << ": " << p.err;
    EXPECT_NE(p.out.find("wrote " + out), std::string::npos) << p.out;
    EXPECT_LT(fs::file_size(out), fs::file_size(model())) << c.type;

    p = run_process({PAGODA_BINARY, "info", "-m", out, "--metadata"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find(c.types_line), std::string::npos) << c.type << ": " << p.out;
    EXPECT_NE(p.out.find("general.file_type = " + std::to_string(c.file_type)), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("general.quantization_version = 2"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("tokenizer:       llama, 512 tokens"), std::string::npos) << p.out;  // metadata copied

    const auto tokens = greedy(out, 20);
    ASSERT_EQ(tokens.size(), 20u) << c.type;
    const size_t agree = common_prefix(tokens, reference);
    ::testing::Test::RecordProperty(std::string("greedy_prefix_") + c.type, std::to_string(agree));
    // Q8_0 is close enough to F32 that the greedy text does not change.
    if (std::string(c.type) == "Q8_0") {
      EXPECT_EQ(agree, 20u);
    }
  }
}

TEST(CliQuantize, OneLineErrors) {
  TempDir dir;
  const std::string q8 = dir.file("q8.gguf");
  ASSERT_EQ(run_process({PAGODA_BINARY, "quantize", model(), q8, "Q8_0"}).exit_code, 0);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{model(), dir.file("x.gguf"), "Q4_1"}, "unknown quantization type 'Q4_1'"},
      {{"/no/such/model.gguf", dir.file("x.gguf"), "Q8_0"}, "cannot open /no/such/model.gguf"},
      {{q8, dir.file("x.gguf"), "Q4_0"}, "already quantized"},
      {{model(), model(), "Q8_0"}, "is the input file"},
      {{model(), "/no/such/dir/out.gguf", "Q8_0"}, "cannot write /no/such/dir/out.gguf"},
      {{model(), dir.file("x.gguf")}, "type"},  // missing TYPE: a command-line error
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {PAGODA_BINARY, "quantize"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto p = run_process(argv);
    EXPECT_NE(p.exit_code, 0) << c.message;
    EXPECT_LT(p.exit_code, 128) << "crashed: " << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << p.err;
    if (c.message != "type") {
      EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
  }
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
  // The input was not touched by the refused overwrite.
  EXPECT_EQ(greedy(model(), 3).size(), 3u);
}

}  // namespace
}  // namespace pagoda
