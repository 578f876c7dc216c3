// Float-path matmul benchmark: a TinyLlama FFN matrix (5632 rows x 2048
// columns) stored as Q8_0, F16 or F32, times 1, 16 or 512 tokens on two
// threads, reported as weight GB/s and GFLOP/s. Next to it, what the machine
// can do: reading memory with two threads (BM_MemoryRead) and independent
// FMAs on two threads (BM_PeakFma), so the figures read as fractions of the
// bandwidth (decode) and of peak FLOP/s (prefill).
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/float_matmul.h"
#include "model/ops.h"
#include "quant/rows.h"

namespace pagoda {
namespace {

constexpr int kThreads = 2;
constexpr int kRows = 5632, kCols = 2048;

struct StoredMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;
};

StoredMatrix make_matrix(TensorType t) {
  StoredMatrix s;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row(kCols);
  const size_t rb = row_bytes(t, kCols);
  s.bytes.resize(rb * kRows);
  for (int r = 0; r < kRows; ++r) {
    for (auto& v : row) v = dist(rng);
    quantize_row(t, row.data(), s.bytes.data() + size_t(r) * rb, kCols);
  }
  s.m = Matrix{"ffn", t, kRows, kCols, rb, s.bytes.data()};
  return s;
}

void BM_Matmul(benchmark::State& state) {
  const auto type = TensorType(state.range(0));
  const int tokens = int(state.range(1));
  static ThreadPool pool(kThreads);
  const StoredMatrix w = make_matrix(type);
  AlignedFloats x(size_t(tokens) * kCols), y(size_t(tokens) * kRows);  // aligned as the model's activations
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : x) v = dist(rng);
  for (auto _ : state) {
    matmul(w.m, x.data(), tokens, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * double(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(iters * 2.0 * kRows * kCols * tokens / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(tensor_type_name(type)));
}
BENCHMARK(BM_Matmul)
    ->ArgsProduct({{int(TensorType::Q8_0), int(TensorType::F16), int(TensorType::F32)}, {1, 16, 512}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Attention's softmax over 512 scores (one head at context 512): the SIMD
// kernel against the scalar loop it replaced (std::exp, a double sum).
void BM_Softmax(benchmark::State& state) {
  const bool simd = state.range(0) != 0;
  std::vector<float> scores(512), x(scores.size());
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& s : scores) s = normal(rng);
  for (auto _ : state) {
    x = scores;
    if (simd) {
      softmax_scaled(x.data(), x.size(), 0.125f);
    } else {
      float max = -INFINITY;
      for (float& v : x) max = std::max(max, v *= 0.125f);
      double sum = 0;
      for (float& v : x) sum += (v = std::exp(v - max));
      const float inv = float(1.0 / sum);
      for (float& v : x) v *= inv;
    }
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["Melem/s"] =
      benchmark::Counter(double(state.iterations()) * double(x.size()) / 1e6, benchmark::Counter::kIsRate);
  state.SetLabel(simd ? "simd" : "scalar");
}
BENCHMARK(BM_Softmax)->Arg(0)->Arg(1);

// Decode attention of one token's KV head group at context 512 (8 query
// heads of 64, TinyLlama's; K and V F32 rows 256 floats apart in blocks of
// 16), scores and values: the per-block calls (matmul_rows_fused, one
// axpy_rows per head and block) against attend_scores / attend_values.
// Same bits; GFLOP/s of the two products.
void BM_DecodeAttention(benchmark::State& state) {
  const bool kernels = state.range(0) != 0;
  constexpr size_t kKvDim = 256, kHd = 64, kHeads = 8, kPos = 513, kBs = 16;
  const size_t n_blocks = (kPos + kBs - 1) / kBs;
  std::vector<float> k(n_blocks * kBs * kKvDim), v(k.size()), q(kHeads * kHd), w(kHeads * kPos), out(kHeads * kHd);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto* x : {&k, &v, &q, &w})
    for (float& f : *x) f = normal(rng);
  std::vector<const void*> k_blocks, v_blocks;
  for (size_t b = 0; b < n_blocks; ++b) {
    k_blocks.push_back(k.data() + b * kBs * kKvDim);
    v_blocks.push_back(v.data() + b * kBs * kKvDim);
  }
  std::vector<float> scores(kHeads * kPos);
  for (auto _ : state) {
    if (kernels) {
      attend_scores(q.data(), kHeads, kHd, PagedRows{TensorType::F32, k_blocks.data(), kBs, kKvDim}, kPos,
                    scores.data(), kPos);
      attend_values(w.data(), kPos, kHeads, PagedRows{TensorType::F32, v_blocks.data(), kBs, kKvDim}, kPos, out.data(),
                    kHd);
    } else {
      for (size_t p0 = 0; p0 < kPos; p0 += kBs)
        matmul_rows_fused(TensorType::F32, k_blocks[p0 / kBs], kKvDim * sizeof(float), std::min(kBs, kPos - p0),
                          q.data(), kHd, kHeads, kHd, &scores[p0], kPos);
      std::fill(out.begin(), out.end(), 0.0f);
      for (size_t p0 = 0; p0 < kPos; p0 += kBs)
        for (size_t h = 0; h < kHeads; ++h)
          axpy_rows_f32(&w[h * kPos + p0], static_cast<const float*>(v_blocks[p0 / kBs]), kKvDim,
                        std::min(kBs, kPos - p0), out.data() + h * kHd, kHd);
    }
    benchmark::DoNotOptimize(scores.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(double(state.iterations()) * 4.0 * kHeads * kPos * kHd / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(kernels ? "attend kernels" : "per-block calls");
}
BENCHMARK(BM_DecodeAttention)->Arg(0)->Arg(1);

// The FFN's activation over one token's 5632 values: the SIMD kernel against
// the scalar loop it replaced (std::exp per element).
void BM_SwiGlu(benchmark::State& state) {
  const bool simd = state.range(0) != 0;
  std::vector<float> gate0(kRows), up(kRows), gate(kRows);
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& g : gate0) g = normal(rng);
  for (float& u : up) u = normal(rng);
  for (auto _ : state) {
    gate = gate0;
    if (simd)
      swiglu_simd(gate.data(), up.data(), gate.size());
    else
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    benchmark::DoNotOptimize(gate.data());
  }
  state.counters["Melem/s"] =
      benchmark::Counter(double(state.iterations()) * double(gate.size()) / 1e6, benchmark::Counter::kIsRate);
  state.SetLabel(simd ? "simd" : "scalar");
}
BENCHMARK(BM_SwiGlu)->Arg(0)->Arg(1);

// Sums a buffer far larger than the caches with two threads.
void BM_MemoryRead(benchmark::State& state) {
  static ThreadPool pool(kThreads);
  const size_t n = size_t(512) << 20 >> 3;  // 512 MiB of uint64
  std::unique_ptr<uint64_t[]> buf(new uint64_t[n]);
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) buf[i] = i;
  });
  for (auto _ : state) {
    std::atomic<uint64_t> total{0};
    pool.parallel_for(
        n,
        [&](size_t b, size_t e) {
          uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          for (size_t i = b; i + 4 <= e; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
          total += s0 + s1 + s2 + s3;
        },
        1 << 16);
    benchmark::DoNotOptimize(total.load());
  }
  state.counters["GB/s"] =
      benchmark::Counter(double(state.iterations()) * double(n * 8) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemoryRead)->UseRealTime()->Unit(benchmark::kMillisecond);

// Independent FMA chains in the widest vectors the machine has.
constexpr int kChains = 16;  // more than FMA latency x ports: throughput-bound
constexpr uint64_t kFmaIters = 1 << 20;

__attribute__((target("avx512f"))) uint64_t fma_avx512() {
  __m512 acc[kChains];
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-3f);
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(float(k + 1));  // distinct, so no chain merges
  for (uint64_t i = 0; i < kFmaIters; ++i)
    for (auto& c : acc) c = _mm512_fmadd_ps(c, m, a);
  float s = 0;
  for (auto& c : acc) s += _mm512_cvtss_f32(c);
  benchmark::DoNotOptimize(s);
  return kFmaIters * kChains * 16 * 2;
}
__attribute__((target("avx2,fma"))) uint64_t fma_avx2() {
  __m256 acc[kChains];
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-3f);
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(float(k + 1));
  for (uint64_t i = 0; i < kFmaIters; ++i)
    for (auto& c : acc) c = _mm256_fmadd_ps(c, m, a);
  float s = 0;
  for (auto& c : acc) s += _mm256_cvtss_f32(c);
  benchmark::DoNotOptimize(s);
  return kFmaIters * kChains * 8 * 2;
}

void BM_PeakFma(benchmark::State& state) {
  static ThreadPool pool(kThreads);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  uint64_t flops = 0;
  for (auto _ : state) {
    std::atomic<uint64_t> f{0};
    pool.on_every_thread([&](size_t) { f += avx512 ? fma_avx512() : fma_avx2(); });
    flops += f.load();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(double(flops) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(avx512 ? "AVX-512" : "AVX2");
}
BENCHMARK(BM_PeakFma)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pagoda

BENCHMARK_MAIN();
