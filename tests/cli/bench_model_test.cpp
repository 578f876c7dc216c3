// `pagoda bench-model --quick --json` end to end: it runs, cleans up after
// itself, and prints every figure with ratios that make sense. Speed itself
// is not tested (no timed unit tests); this keeps the benchmark from rotting.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "testing/build_paths.h"
#include "testing/process.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using testing::run_process;

TEST(CliBenchModel, QuickJsonHasEveryFigureWithSaneRatios) {
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("pagoda-bench-model-" + std::to_string(rd()));
  fs::create_directories(dir);
  // A short prompt and context and two batch sizes keep this fast under the
  // sanitizers (~5 s in Release, under 20 s with ASan).
  const auto p = run_process({PAGODA_BINARY, "bench-model", "--quick", "--json", "--threads", "2", "--steps", "1",
                              "--prompt", "64", "--context", "64", "--batches", "1,16", "--dir", dir.string()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // The temporary model folder is gone.
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);

  const auto j = nlohmann::json::parse(p.out);
  const auto& m = j["machine"];
  EXPECT_EQ(m["threads"], 2);
  EXPECT_GT(m["read_bandwidth_bytes_per_s"].get<double>(), 1e8);
  EXPECT_GE(m["bandwidth_buffer_bytes"].get<double>(), double(1 << 30));
  EXPECT_GT(m["peak_fma_flops_per_s"].get<double>(), 1e8);
  EXPECT_FALSE(m["simd_target"].get<std::string>().empty());
  // The int8 peak where an x86 CPU has a dot product the kernels use: at
  // least the f32 FMA peak's rate (2 to 4 8-bit products per f32 lane).
  const bool int8_measured = !m["int8_instruction"].get<std::string>().empty();
  if (int8_measured) EXPECT_GT(m["peak_int8_ops_per_s"].get<double>(), m["peak_fma_flops_per_s"].get<double>());

  ASSERT_EQ(j["results"].size(), 3u);
  std::vector<std::string> types;
  for (const auto& r : j["results"]) {
    types.push_back(r["type"]);
    EXPECT_EQ(r["model"], "10m");
    EXPECT_GT(r["weight_bytes_per_token"].get<double>(), 1e6);
    EXPECT_GT(r["prefill_tokens_per_s"].get<double>(), 0);
    ASSERT_EQ(r["decode"].size(), 4u);  // batches 1 and 16 at two contexts
    for (const auto& d : r["decode"]) EXPECT_GT(d["tokens_per_s"].get<double>(), 0);
    // A ratio above 1 means a wrong measurement, for the full run's models.
    // Here: the FMA ceiling is measured while the rest of the test suite may
    // load the same cores, so a prefill that ran at a quieter moment can beat
    // it a little: (0, 1.5) still catches a miscounted FLOP or unit. The 10M
    // model's weights (4-15 MB a token) fit in the last-level cache, so its
    // decode may legitimately read faster than the DRAM bandwidth measured on
    // a buffer larger than the cache: only a positive, not absurd (unit error
    // sized, 10^3) ratio is required.
    // The integer kernels (every quantized type: Q8_0 too, since its prefill
    // runs vpdpbusd panels) may beat the f32 FMA peak by up to 4x in
    // principle (four 8-bit products per lane), so their bound is 6; only
    // F16, on f32 FMAs, keeps 1.5 (Q8_0 once read 1.59 here under ASan).
    EXPECT_GT(r["fma_ratio"].get<double>(), 0);
    EXPECT_LT(r["fma_ratio"].get<double>(), r["type"] == "f16" ? 1.5 : 6.0) << r["type"];
    // Over the int8 peak: quantized types only, and (as the FMA ratio,
    // measured under load) below 1.5.
    if (r["type"] == "f16" || !int8_measured) {
      EXPECT_EQ(r["int8_ratio"].get<double>(), 0) << r["type"];
    } else {
      EXPECT_GT(r["int8_ratio"].get<double>(), 0) << r["type"];
      EXPECT_LT(r["int8_ratio"].get<double>(), 1.5) << r["type"];
    }
    EXPECT_GT(r["bandwidth_ratio"].get<double>(), 0);
    EXPECT_LT(r["bandwidth_ratio"].get<double>(), 50.0);
    EXPECT_GT(r["batch16_speedup"].get<double>(), 0);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"f16", "q8_0", "q4_k"}));
}

TEST(CliBenchModel, RejectsAnUnknownModel) {
  const auto p = run_process({PAGODA_BINARY, "bench-model", "--models", "7b"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("unknown model"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace pagoda
