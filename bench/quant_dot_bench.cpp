// Quantized dot product benchmark: the scalar reference kernels against the
// SIMD ones (GB/s of weight bytes, one thread, weights in L2), activation
// quantization (scalar and SIMD), and matmul on a 5632 x 2048 Q4_K matrix (a TinyLlama FFN
// matrix) at 1, 16 and 512 tokens on 2 threads, next to a 2-thread memory
// read of the same kind of buffer. The decode (1-token) case cycles through
// copies of the matrix totalling more than the last-level cache, so it reads
// from DRAM as a model's forward pass does.
//
// Counters: GB/s = weight bytes read per second; GFLOP/s = 2 * rows * cols *
// tokens per second.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "kernels/panels.h"
#include "kernels/quant_dot.h"
#include "kernels/quantize_activations.h"
#include "model/ops.h"
#include "quant/dot.h"
#include "quant/random_blocks.h"
#include "quant/rows.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

// Random block bytes with sane F16 scales: the kernels' speed does not
// depend on the values, and quantizing hundreds of MB would take minutes.
std::vector<uint8_t> random_weights(TensorType t, size_t rows, size_t cols) {
  std::mt19937 rng{1};
  return testing::random_blocks(t, rows * cols, rng);
}

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng{2};
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

constexpr size_t kCols = 2048;
constexpr size_t kL2Rows = 64;  // 64 rows of 2048: 73 KB of Q4_K

// One thread, kL2Rows weight rows (cached) against n_x activation rows in
// tiles of n_w weight rows; scalar: the reference kernels, one row pair at a time.
void BM_VecDot(benchmark::State& state, TensorType t, bool simd, int n_w, int n_x) {
  const auto w = random_weights(t, kL2Rows, kCols);
  const TensorType xt = activation_type(t);
  const size_t xb = row_bytes(xt, kCols), wb = row_bytes(t, kCols);
  std::vector<uint8_t> xq(size_t(n_x) * xb);
  const auto x = random_floats(kCols);
  for (int k = 0; k < n_x; ++k) quantize_row(xt, x.data(), xq.data() + k * xb, kCols);
  float out[kDotRowsMax * kDotTokensMax];
  for (auto _ : state) {
    for (size_t r = 0; r < kL2Rows; r += size_t(n_w)) {
      const uint8_t* wr = w.data() + r * wb;
      if (simd) {
        vec_dot_tile(t, wr, wb, n_w, xq.data(), xb, n_x, kCols, out, size_t(n_w));
      } else {
        out[0] = vec_dot_scalar(t, wr, xq.data(), kCols);
      }
      benchmark::DoNotOptimize(out[0]);
    }
  }
  const double iters = double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * kL2Rows * wb / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(iters * kL2Rows * kCols * n_x / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(simd ? dot_simd_target() : "scalar");
}

void BM_QuantizeActivations(benchmark::State& state, TensorType xt, bool simd) {
  const auto x = random_floats(kCols);
  std::vector<uint8_t> out(row_bytes(xt, kCols));
  for (auto _ : state) {
    if (simd) {
      quantize_activations(xt, x.data(), out.data(), kCols);
    } else {
      quantize_row(xt, x.data(), out.data(), kCols);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["Gelem/s"] = benchmark::Counter(double(state.iterations()) * kCols / 1e9, benchmark::Counter::kIsRate);
}

// matmul of a 5632 x 2048 matrix of type t on 2 threads. Copies of it fill
// more than the last-level cache (480 MB on the reference machine) and each
// call takes the next, so weights come from DRAM; with many tokens the
// reads are amortized and the kernels' arithmetic dominates.
constexpr size_t kRows = 5632;
constexpr size_t kCopiesBytes = size_t(640) << 20;

// With `panels`, the matrix is packed into row panels (kernels/panels.h) as a
// model load does on CPUs that run them; `hot`: one copy, which stays in the
// last-level cache (the kernels' arithmetic rate rather than memory's).
struct MatmulFixture {
  TensorType t;
  std::vector<uint8_t> weights;
  size_t matrix_bytes, copies;
  int panel_rows = 0;
  explicit MatmulFixture(TensorType type, bool panels = false, bool hot = false) : t(type) {
    matrix_bytes = kRows * row_bytes(t, kCols);
    copies = hot ? 1 : kCopiesBytes / matrix_bytes;
    // One random matrix, copied: the copies need distinct memory, not distinct
    // values, and drawing hundreds of MB byte by byte would take seconds.
    auto one = random_weights(t, kRows, kCols);
    if (panels && prefers_panels(t)) panel_rows = pack_panels(t, one.data(), row_bytes(t, kCols), int(kRows));
    weights.resize(copies * matrix_bytes);
    for (size_t c = 0; c < copies; ++c) std::memcpy(weights.data() + c * matrix_bytes, one.data(), matrix_bytes);
  }
  Matrix matrix(size_t copy) const {
    Matrix m;
    m.type = t;
    m.rows = int(kRows);
    m.cols = int(kCols);
    m.row_bytes = row_bytes(t, kCols);
    m.data = weights.data() + (copy % copies) * matrix_bytes;
    m.panel_rows = panel_rows;
    return m;
  }
};

void run_matmul(benchmark::State& state, const MatmulFixture& f) {
  const int n_tokens = int(state.range(0));
  ThreadPool pool(2);
  const auto x = random_floats(size_t(n_tokens) * kCols);
  std::vector<float> y(size_t(n_tokens) * kRows);
  size_t copy = 0;
  for (auto _ : state) {
    matmul(f.matrix(copy++), x.data(), n_tokens, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * f.matrix_bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(iters * 2.0 * kRows * kCols * n_tokens / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dot_simd_target()) + (f.panel_rows ? ", panels" : ""));
}

void BM_Matmul(benchmark::State& state, TensorType t) {
  static MatmulFixture q4k(TensorType::Q4_K), q6k(TensorType::Q6_K), q80(TensorType::Q8_0), q40(TensorType::Q4_0);
  run_matmul(state, t == TensorType::Q4_K ? q4k : t == TensorType::Q6_K ? q6k : t == TensorType::Q4_0 ? q40 : q80);
}

// The same packed into row panels (where the CPU runs them), from DRAM and hot.
void BM_MatmulPanels(benchmark::State& state, TensorType t, bool hot) {
  static MatmulFixture q4k(TensorType::Q4_K, true), q6k(TensorType::Q6_K, true), q80(TensorType::Q8_0, true);
  static MatmulFixture q4k_hot(TensorType::Q4_K, true, true), q6k_hot(TensorType::Q6_K, true, true),
      q80_hot(TensorType::Q8_0, true, true);
  if (hot)
    run_matmul(state, t == TensorType::Q4_K ? q4k_hot : t == TensorType::Q6_K ? q6k_hot : q80_hot);
  else
    run_matmul(state, t == TensorType::Q4_K ? q4k : t == TensorType::Q6_K ? q6k : q80);
}

// One thread, one token, 2 panels side by side (decode's kernel) over kL2Rows
// rows kept in L2: the kernels' arithmetic rate, which decode needs well above
// the memory's share of one core.
void BM_PanelStreamsL2(benchmark::State& state, TensorType t) {
  if (!prefers_panels(t)) return state.SkipWithError("no panel kernels on this CPU");
  auto w = random_weights(t, kL2Rows, kCols);
  const size_t rb = row_bytes(t, kCols);
  pack_panels(t, w.data(), rb, int(kL2Rows));
  const auto x = random_floats(kCols);
  std::vector<uint8_t> xq(row_bytes(activation_type(t), kCols));
  quantize_activations(activation_type(t), x.data(), xq.data(), kCols);
  PanelActivations a;
  prepare_panel_activations(t, xq.data(), xq.size(), 1, kCols / size_t(block_elems(t)), a);
  float y[kL2Rows];
  const size_t half = kL2Rows / 2;
  for (auto _ : state)
    for (size_t r = 0; r < half; r += kPanelRows) {
      const uint8_t* panels[2] = {w.data() + r * rb, w.data() + (half + r) * rb};
      float* outs[2] = {y + r, y + half + r};
      panel_dot_streams(t, panels, 2, a, 0, outs);
      benchmark::DoNotOptimize(y);
    }
  state.counters["GB/s"] =
      benchmark::Counter(double(state.iterations()) * double(w.size()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q8_0, TensorType::Q8_0);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q4_0, TensorType::Q4_0);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q4_k, TensorType::Q4_K);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q6_k, TensorType::Q6_K);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q5_0, TensorType::Q5_0);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q5_1, TensorType::Q5_1);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, iq4_nl, TensorType::IQ4_NL);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, mxfp4, TensorType::MXFP4);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q2_k, TensorType::Q2_K);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q3_k, TensorType::Q3_K);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, q5_k, TensorType::Q5_K);
BENCHMARK_CAPTURE(BM_PanelStreamsL2, iq4_xs, TensorType::IQ4_XS);

// One thread, kPanelTokensMax tokens against kL2Rows rows of panels kept in
// L2 (prefill's kernel): GFLOP/s, which bounds prefill's tokens per second.
void BM_PanelPrefillL2(benchmark::State& state, TensorType t) {
  if (!prefers_panels(t)) return state.SkipWithError("no panel kernels on this CPU");
  auto w = random_weights(t, kL2Rows, kCols);
  const size_t rb = row_bytes(t, kCols);
  pack_panels(t, w.data(), rb, int(kL2Rows));
  const TensorType xt = activation_type(t);
  const size_t xb = row_bytes(xt, kCols);
  const auto x = random_floats(kCols);
  std::vector<uint8_t> xq(kPanelTokensMax * xb);
  for (int k = 0; k < kPanelTokensMax; ++k) quantize_activations(xt, x.data(), xq.data() + k * xb, kCols);
  PanelActivations a;
  prepare_panel_activations(t, xq.data(), xb, kPanelTokensMax, kCols / size_t(block_elems(t)), a);
  float y[kPanelTokensMax * kL2Rows];
  for (auto _ : state)
    for (size_t r = 0; r < kL2Rows; r += kPanelRows) {
      panel_dot(t, w.data() + r * rb, a, 0, kPanelTokensMax, y + r, kL2Rows);
      benchmark::DoNotOptimize(y);
    }
  state.counters["GFLOP/s"] = benchmark::Counter(
      double(state.iterations()) * 2.0 * kL2Rows * kCols * kPanelTokensMax / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q4_k, TensorType::Q4_K);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q6_k, TensorType::Q6_K);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q5_1, TensorType::Q5_1);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, iq4_nl, TensorType::IQ4_NL);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, mxfp4, TensorType::MXFP4);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q2_k, TensorType::Q2_K);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q3_k, TensorType::Q3_K);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, q5_k, TensorType::Q5_K);
BENCHMARK_CAPTURE(BM_PanelPrefillL2, iq4_xs, TensorType::IQ4_XS);

// Reads 640 MB on 2 threads (64-bit loads summed in 8 independent chains,
// which the compiler vectorizes): the DRAM bandwidth decode competes for.
void BM_MemoryRead(benchmark::State& state) {
  static std::vector<uint64_t> buf(kCopiesBytes / 8, 1);
  ThreadPool pool(2);
  for (auto _ : state) {
    uint64_t total[2] = {};
    pool.on_every_thread([&](size_t p) {
      const size_t n = buf.size() / 2;
      const uint64_t* a = buf.data() + p * n;
      uint64_t s[8] = {};
      for (size_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; ++j) s[j] += a[i + j];
      for (int j = 0; j < 8; ++j) total[p] += s[j];
    });
    benchmark::DoNotOptimize(total);
  }
  state.counters["GB/s"] =
      benchmark::Counter(double(state.iterations()) * kCopiesBytes / 1e9, benchmark::Counter::kIsRate);
}

// Q4_K with each of the two AVX-512 kernels (the default picks one per CPU vendor).
void BM_VecDotQ4KLayout(benchmark::State& state, bool wide, int n_w, int n_x) {
  const bool saved = q4k_wide_vectors();
  set_q4k_wide_vectors(wide);
  BM_VecDot(state, TensorType::Q4_K, true, n_w, n_x);
  set_q4k_wide_vectors(saved);
}
BENCHMARK_CAPTURE(BM_VecDotQ4KLayout, q4_k_256bit_4x1, false, 4, 1);
BENCHMARK_CAPTURE(BM_VecDotQ4KLayout, q4_k_512bit_4x1, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDotQ4KLayout, q4_k_256bit_4x4, false, 4, 4);
BENCHMARK_CAPTURE(BM_VecDotQ4KLayout, q4_k_512bit_4x4, true, 4, 4);
BENCHMARK_CAPTURE(BM_VecDotQ4KLayout, q4_k_512bit_4x8, true, 4, 8);

BENCHMARK_CAPTURE(BM_VecDot, q4_0_scalar, TensorType::Q4_0, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_0_simd, TensorType::Q4_0, true, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_0_simd_4x1, TensorType::Q4_0, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_0_simd_4x4, TensorType::Q4_0, true, 4, 4);
BENCHMARK_CAPTURE(BM_VecDot, q4_0_simd_4x8, TensorType::Q4_0, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, q5_0_scalar, TensorType::Q5_0, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q5_0_simd, TensorType::Q5_0, true, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q5_0_simd_4x1, TensorType::Q5_0, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q5_0_simd_4x4, TensorType::Q5_0, true, 4, 4);
BENCHMARK_CAPTURE(BM_VecDot, q5_0_simd_4x8, TensorType::Q5_0, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, q8_0_scalar, TensorType::Q8_0, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q8_0_simd, TensorType::Q8_0, true, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q8_0_simd_4x1, TensorType::Q8_0, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_k_scalar, TensorType::Q4_K, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_k_simd, TensorType::Q4_K, true, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_k_simd_4x1, TensorType::Q4_K, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q4_k_simd_4x4, TensorType::Q4_K, true, 4, 4);
BENCHMARK_CAPTURE(BM_VecDot, q4_k_simd_4x8, TensorType::Q4_K, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, q6_k_scalar, TensorType::Q6_K, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, q6_k_simd, TensorType::Q6_K, true, 1, 1);
// The decoded formats (quant_dot_decoded.cpp): decode's 4 rows x 1 token, prefill's tiles.
BENCHMARK_CAPTURE(BM_VecDot, q5_1_simd_4x1, TensorType::Q5_1, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, iq4_nl_simd_4x1, TensorType::IQ4_NL, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, mxfp4_scalar, TensorType::MXFP4, false, 1, 1);
BENCHMARK_CAPTURE(BM_VecDot, mxfp4_simd_4x1, TensorType::MXFP4, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q2_k_simd_4x1, TensorType::Q2_K, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q3_k_simd_4x1, TensorType::Q3_K, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q5_k_simd_4x1, TensorType::Q5_K, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, iq4_xs_simd_4x1, TensorType::IQ4_XS, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q5_k_simd_4x8, TensorType::Q5_K, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, iq4_nl_simd_4x8, TensorType::IQ4_NL, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, mxfp4_simd_4x8, TensorType::MXFP4, true, 4, 8);
BENCHMARK_CAPTURE(BM_VecDot, q6_k_simd_4x1, TensorType::Q6_K, true, 4, 1);
BENCHMARK_CAPTURE(BM_VecDot, q6_k_simd_4x4, TensorType::Q6_K, true, 4, 4);
BENCHMARK_CAPTURE(BM_VecDot, q6_k_simd_4x8, TensorType::Q6_K, true, 4, 8);
BENCHMARK_CAPTURE(BM_QuantizeActivations, q8_0_scalar, TensorType::Q8_0, false);
BENCHMARK_CAPTURE(BM_QuantizeActivations, q8_k_scalar, TensorType::Q8_K, false);
BENCHMARK_CAPTURE(BM_QuantizeActivations, q8_k_simd, TensorType::Q8_K, true);
BENCHMARK_CAPTURE(BM_Matmul, q4_k, TensorType::Q4_K)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q6_k, TensorType::Q6_K)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q8_0, TensorType::Q8_0)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q4_0, TensorType::Q4_0)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q4_k, TensorType::Q4_K, false)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q6_k, TensorType::Q6_K, false)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q8_0, TensorType::Q8_0, false)->Arg(1)->Arg(16)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q4_k_hot, TensorType::Q4_K, true)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q6_k_hot, TensorType::Q6_K, true)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulPanels, q8_0_hot, TensorType::Q8_0, true)->Arg(1)->UseRealTime();
BENCHMARK(BM_MemoryRead)->UseRealTime();

}  // namespace
}  // namespace pagoda

BENCHMARK_MAIN();
