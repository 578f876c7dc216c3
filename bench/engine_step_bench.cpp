// The engine's own work in a decode step of 128 sequences (scheduling, block
// bookkeeping, sampling, statistics; no tokenizer), over a backend that
// costs nothing but handing its answers back: what a GPU step leaves to the
// host (issue 40, docs/gpu.md "Host overhead"). Two backends:
//   device_sampling  samples every row itself (ModelRunner::samples_rows):
//                    128 ids come back
//   cpu_sampling     every row's logits come back (a 128k vocabulary: 64 MiB
//                    copied a step, as from a GPU's pinned buffer) and the
//                    engine samples them (--cpu-sampling)
// Requests use OpenAI's defaults (temperature 1, no top-k or top-p): the
// CPU's full-vocabulary path; one run adds a repetition penalty. Counters: host_us (the engine's step minus
// the backend's), backend_us (the copy of the logits, for cpu_sampling).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/clock.h"
#include "engine/engine_core.h"
#include "sampling/rng.h"

namespace pagoda {
namespace {

constexpr int32_t kStepVocab = 128256;  // Llama 3's
constexpr int32_t kStepSeqs = 128;

// Answers at once: a sampled row's token is the next id, a logits row one
// fixed row copied out.
class InstantRunner : public ModelRunner {
 public:
  explicit InstantRunner(bool samples) : samples_(samples), row_(size_t(kStepVocab)) {
    Rng rng(1);
    for (float& x : row_) x = float(rng.uniform() * 20.0 - 10.0);
  }
  int32_t vocab_size() const override { return kStepVocab; }
  int32_t context_length() const override { return 4096; }
  void copy_blocks(std::span<const BlockCopy>) override {}
  bool samples_rows() const override { return samples_; }
  void forward(const Batch& batch, std::vector<float>& logits) override {
    const size_t rows =
        size_t(std::count_if(batch.tokens.begin(), batch.tokens.end(), [](auto& t) { return t.logits; }));
    logits.resize(rows * row_.size());
    for (size_t r = 0; r < rows; ++r) std::copy(row_.begin(), row_.end(), logits.begin() + ptrdiff_t(r * row_.size()));
  }
  void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                       std::vector<SampledRow>& sampled) override {
    if (sampling.empty()) {
      sampled.clear();
      return forward(batch, logits);
    }
    logits.clear();  // every row sampled here (no grammar, one choice)
    sampled.assign(sampling.rows.size(), {});
    for (size_t i = 0; i < sampled.size(); ++i) sampled[i].token = int32_t(3 + (next_++ % 30000));
  }

 private:
  bool samples_;
  std::vector<float> row_;
  int64_t next_ = 0;
};

void engine_step(benchmark::State& state, bool device_sampling, int prompt_len = 32, float repetition_penalty = 1.0f) {
  EngineConfig cfg;
  cfg.log_interval_s = 0;
  cfg.sched.max_num_seqs = kStepSeqs;
  cfg.sched.max_batched_tokens = 8192;
  const int32_t blocks = kStepSeqs * 4096 / 16;
  EngineCore core(cfg, std::make_unique<InstantRunner>(device_sampling), blocks, nullptr,
                  std::make_shared<SteadyClock>());
  for (int i = 0; i < kStepSeqs; ++i) {
    Request r;
    for (int t = 0; t < prompt_len; ++t) r.prompt.push_back(3 + (i * prompt_len + t) % 30000);
    r.sampling.repetition_penalty = repetition_penalty;
    r.sampling.max_tokens = 2000;
    r.sampling.ignore_eos = true;
    core.validate(r);
    core.add(uint64_t(i + 1), std::move(r), [](RequestOutput&&) { return true; });
  }
  while (core.stats().generation_tokens < kStepSeqs) core.step();  // the prompts, until every sequence decodes
  const double forward0 = core.stats().time_in_forward;
  double wall = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    core.step();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double backend = core.stats().time_in_forward - forward0;
  const double steps = double(state.iterations());
  state.counters["host_us"] = (wall - backend) / steps * 1e6;
  state.counters["backend_us"] = backend / steps * 1e6;
}

void BM_EngineStep128_DeviceSampling(benchmark::State& state) { engine_step(state, true); }
// With a repetition penalty over 1,000-token prompts: every step sends each
// row's history (1,000+ distinct tokens) along with its record.
void BM_EngineStep128_DeviceSamplingPenalized(benchmark::State& state) { engine_step(state, true, 1000, 1.1f); }
void BM_EngineStep128_CpuSampling(benchmark::State& state) { engine_step(state, false); }
BENCHMARK(BM_EngineStep128_DeviceSampling)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EngineStep128_DeviceSamplingPenalized)->Iterations(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EngineStep128_CpuSampling)->Iterations(10)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pagoda

BENCHMARK_MAIN();
