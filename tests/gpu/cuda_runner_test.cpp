// The GPU runner's host half under the real engine, on a fake device that
// computes with the CPU model: the same tokens as the CPU runner, and each
// device failure taking its reaction (out of memory: halve, no request lost;
// recoverable: bisect and retry; sticky or hung: every request ends, the
// audit holds, nothing runs again).
#include "gpu/cuda_runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "fake_device.h"
#include "testing/shared_data.h"
#include "tokenizer/tokenizer.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda::gpu {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;
constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int kCudaErrorMemoryAllocation = 2, kCudaErrorIllegalAddress = 700, kCudaErrorLaunchOutOfResources = 701;

std::shared_ptr<Model> stories() {
  static const std::string path = pagoda::testing::shared_path("models/stories260K.gguf");
  return std::shared_ptr<Model>(Model::load(path, Residency::kInMemory));
}

CudaRunnerOptions small_pool() {
  CudaRunnerOptions o;
  o.kv_cache_tokens = 1024;
  o.kv_type = KvType::F32;  // as the CPU engine's default: the same logits, bit for bit
  o.max_batched_tokens = 256;
  o.max_num_seqs = 16;
  return o;
}

EngineConfig engine_config(const CudaRunnerOptions& o) {
  EngineConfig cfg;
  cfg.audit_every_step = true;
  cfg.log_interval_s = 0;
  cfg.kv_cache_tokens = o.kv_cache_tokens;
  cfg.sched.max_batched_tokens = o.max_batched_tokens;
  cfg.sched.max_num_seqs = o.max_num_seqs;
  cfg.sched.max_step_ms = 0;  // the token budget alone: steps (and preemptions) must not depend on the machine's speed
  return cfg;
}

// An engine over a CudaRunner over a fake device of `device_bytes`, armed
// with its faults before the engine's thread starts.
std::unique_ptr<Engine> gpu_engine(const CudaRunnerOptions& o, const std::function<void(FakeDevice&)>& arm = {},
                                   FakeDevice** device_out = nullptr, bool cpu_sampling = false,
                                   std::shared_ptr<Model> model = nullptr) {
  if (!model) model = stories();
  auto device = std::make_unique<FakeDevice>(model, 64 * kMiB);
  if (arm) arm(*device);
  if (device_out) *device_out = device.get();
  auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_gguf(model->file()));
  auto runner = std::make_unique<CudaRunner>(model, std::move(device), o);
  const int32_t blocks = runner->num_blocks();
  EngineConfig cfg = engine_config(o);
  cfg.sample_on_device = !cpu_sampling;
  return std::make_unique<Engine>(cfg, std::move(runner), blocks, tokenizer);
}

Request greedy(std::mt19937& rng, size_t prompt_len, int32_t max_tokens) {
  Request r;
  r.prompt = {1};
  while (r.prompt.size() < prompt_len) r.prompt.push_back(TokenId(3 + rng() % 509));
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

std::vector<Request> crowd(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Request> reqs;
  for (int i = 0; i < n; ++i) reqs.push_back(greedy(rng, 60 + rng() % 120, 40));
  return reqs;
}

EngineStats drained(const Engine& e) {
  for (int i = 0; i < 500; ++i) {
    const auto s = e.snapshot();
    if (s.running == 0 && s.waiting == 0 && s.requests_finished() == s.requests_received) return s;
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "the engine did not drain";
  return e.snapshot();
}

// Every choice ran to its length with the reference's tokens.
template <class Results>
void expect_same_tokens(const Results& got, const Results& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].choices.size(), want[i].choices.size());
    for (size_t c = 0; c < got[i].choices.size(); ++c) {
      EXPECT_EQ(got[i].choices[c].finish, FinishReason::length) << got[i].choices[c].error;
      EXPECT_EQ(got[i].choices[c].tokens, want[i].choices[c].tokens) << "request " << i << " choice " << c;
    }
  }
}

TEST(CudaRunner, SizesItsPoolFromWhatTheDeviceHasLeft) {
  auto model = stories();
  auto device = std::make_unique<FakeDevice>(model, 64 * kMiB);
  FakeDevice& d = *device;
  CudaRunnerOptions o = small_pool();
  o.kv_cache_tokens = 0;
  o.gpu_memory_utilization = 0.5;
  CudaRunner r(model, std::move(device), o);
  const int64_t block_bytes = 2 * int64_t(model->config().n_layer) * 16 * model->config().max_kv_dim() * 4;
  const int64_t setup = d.used_bytes() - r.memory_plan().kv_bytes;  // weights and workspace
  EXPECT_GT(setup, 0);
  EXPECT_EQ(r.num_blocks(), (32 * kMiB - setup) / block_bytes);
  EXPECT_LE(d.used_bytes(), 32 * kMiB);
  EXPECT_EQ(d.kv()->num_blocks(), r.num_blocks());
}

TEST(CudaRunner, AShareThatIsNotFreeIsRefusedAtStart) {
  auto model = stories();
  auto device = std::make_unique<FakeDevice>(model, 64 * kMiB);
  device->hold(40 * kMiB);  // another process
  CudaRunnerOptions o = small_pool();
  o.kv_cache_tokens = 0;
  EXPECT_THROW(CudaRunner(model, std::move(device), o), ResourceExhausted);
}

TEST(CudaRunner, GreedyTokensAreTheCpuRunners) {
  CudaRunnerOptions o = small_pool();
  o.kv_cache_tokens = 512;
  EngineConfig cpu_cfg = engine_config(o);
  auto cpu = Engine::load(pagoda::testing::shared_path("models/stories260K.gguf"), cpu_cfg);
  auto gpu = gpu_engine(o);
  // 24 requests on a 512-token pool: chunked prompts, preemptions, and
  // shared prefixes' copy-on-write (n = 3) on the device. 100 tokens each,
  // past the 64 an admitted sequence is promised: running ones outgrow the
  // pool however the requests' arrival interleaves with the steps.
  std::mt19937 rng(4);
  std::vector<Request> reqs;
  for (int i = 0; i < 24; ++i) reqs.push_back(greedy(rng, 60 + rng() % 120, 100));
  reqs[0].n = 3;
  const auto want = cpu->generate(reqs);
  const auto got = gpu->generate(reqs);
  expect_same_tokens(got, want);
  const auto s = drained(*gpu);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

TEST(CudaRunner, OutOfDeviceMemoryHalvesTheStepAndLosesNoRequest) {
  auto e = gpu_engine(small_pool(), [](FakeDevice& d) {
    d.fail_at(FakeDevice::Call::kLaunch, 4, DeviceStatus::cuda(kCudaErrorMemoryAllocation, "cudaMallocAsync"));
  });
  for (const auto& c : e->generate(crowd(12, 5))) EXPECT_EQ(c.choices[0].finish, FinishReason::length);
  const auto s = drained(*e);
  // Halved (oom_retries), or, where the failed step held one sequence (arrivals race the first
  // steps), that sequence retried alone (step_failures): either way no request is lost.
  EXPECT_GE(s.oom_retries + s.step_failures, 1);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

TEST(CudaRunner, AWorkspaceThatCannotGrowHalvesTheStepBeforeAnyLaunch) {
  CudaRunnerOptions o = small_pool();
  FakeDevice* device = nullptr;
  o.max_batched_tokens = 16;  // reserved for 16 tokens; the engine's steps bring up to 256
  auto model = stories();
  auto d = std::make_unique<FakeDevice>(model, 64 * kMiB);
  device = d.get();
  auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_gguf(model->file()));
  auto runner = std::make_unique<CudaRunner>(model, std::move(d), o);
  device->fail_at(FakeDevice::Call::kReserveWorkspace, 1,
                  DeviceStatus::cuda(kCudaErrorMemoryAllocation, "cudaHostAlloc"));  // pinned memory ran out
  const int32_t blocks = runner->num_blocks();
  EngineConfig cfg = engine_config(small_pool());
  Engine e(cfg, std::move(runner), blocks, tokenizer);
  for (const auto& c : e.generate(crowd(4, 6))) EXPECT_EQ(c.choices[0].finish, FinishReason::length);
  const auto s = drained(e);
  // A first step that holds several sequences is halved; one that took in
  // only the first arrival cannot be, and is retried alone. Either way the
  // failed reservation was answered and every request ended.
  EXPECT_GE(s.oom_retries + s.step_failures, 1);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

TEST(CudaRunner, PromptLogprobsGrowTheLogitsRowsBeforeTheLaunch) {
  FakeDevice* device = nullptr;
  auto e = gpu_engine(small_pool(), {}, &device);
  std::mt19937 rng(13);
  Request r = greedy(rng, 100, 4);
  r.prompt_logprobs = 1;  // 99 rows of logits in one step, reserved for 16
  const auto out = e->generate({r});
  EXPECT_EQ(out[0].choices[0].finish, FinishReason::length) << out[0].choices[0].error;
  drained(*e);
  EXPECT_EQ(device->reservations(), 2);
}

TEST(CudaRunner, ARecoverableLaunchFailureIsRetriedInHalves) {
  auto e = gpu_engine(small_pool(), [](FakeDevice& d) {
    d.fail_at(FakeDevice::Call::kLaunch, 3, DeviceStatus::cuda(kCudaErrorLaunchOutOfResources, "cudaLaunchKernel"));
  });
  for (const auto& c : e->generate(crowd(8, 7))) EXPECT_EQ(c.choices[0].finish, FinishReason::length);
  const auto s = drained(*e);
  EXPECT_GE(s.forward_retries, 1);
  EXPECT_TRUE(s.device_lost.empty());
}

TEST(CudaRunner, AStickyFaultEndsEveryRequestAndNothingRunsAgain) {
  FakeDevice* device = nullptr;
  auto e = gpu_engine(
      small_pool(),
      [](FakeDevice& d) {
        d.fail_at(FakeDevice::Call::kLaunch, 6, DeviceStatus::cuda(kCudaErrorIllegalAddress, "cudaLaunchKernel"));
      },
      &device);
  for (const auto& c : e->generate(crowd(10, 8))) {
    EXPECT_EQ(c.choices[0].finish, FinishReason::error);
    EXPECT_NE(c.choices[0].error.find("the device was lost"), std::string::npos) << c.choices[0].error;
    EXPECT_NE(c.choices[0].error.find("cudaErrorIllegalAddress"), std::string::npos) << c.choices[0].error;
  }
  const auto s = drained(*e);
  EXPECT_NE(s.device_lost.find("cudaErrorIllegalAddress"), std::string::npos) << s.device_lost;
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.forward_retries, 0);  // a sticky fault is not bisected
  const int launches = device->launches();
  const auto later = e->generate(crowd(2, 9));
  for (const auto& c : later) EXPECT_EQ(c.choices[0].finish, FinishReason::error);
  EXPECT_EQ(device->launches(), launches);
}

TEST(CudaRunner, AHungStepLosesTheDeviceAtItsDeadline) {
  CudaRunnerOptions o = small_pool();
  o.step_deadline_s = 0.3;
  auto e = gpu_engine(o, [](FakeDevice& d) { d.hang_at_launch(3); });
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& c : e->generate(crowd(6, 10))) {
    EXPECT_EQ(c.choices[0].finish, FinishReason::error);
    EXPECT_NE(c.choices[0].error.find("did not finish by its deadline"), std::string::npos) << c.choices[0].error;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(drained(*e).kv_blocks_used, 0);
}

// The seeds' crowd: 30 requests of ~351 tokens into a 4,096-token pool, on a
// device whose launches run out of memory (5%) or fail (1%) at random.
TEST(CudaRunner, ACrowdOnATinyPoolOfAFaultyDeviceAllEnds) {
  CudaRunnerOptions o = small_pool();
  o.kv_cache_tokens = 4096;
  o.max_num_seqs = 30;
  o.max_batched_tokens = 512;
  auto e = gpu_engine(o, [](FakeDevice& d) { d.fail_at_random(0.05, 0.01, 11); });
  std::mt19937 rng(12);
  std::vector<Request> reqs;
  for (int i = 0; i < 30; ++i) reqs.push_back(greedy(rng, 330 + rng() % 40, 60));
  int ok = 0, errors = 0;
  for (const auto& c : e->generate(reqs)) {
    const auto& ch = c.choices[0];
    ch.finish == FinishReason::length ? ++ok : ++errors;
    if (ch.finish != FinishReason::length) {
      EXPECT_NE(ch.error.find("cudaError"), std::string::npos) << ch.error;
    }
  }
  const auto s = drained(*e);
  EXPECT_GT(ok, 25);
  EXPECT_LE(errors, 3);  // failed launches cost retries, not requests
  EXPECT_GT(s.oom_retries, 0);
  EXPECT_GT(s.forward_retries, 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_TRUE(s.device_lost.empty());
}

// Sampling on the device (sampling/row_sample.h; the fake samples with the
// kernels' reference): greedy tokens and logprobs as the CPU path's, a
// seeded stream the same through failed passes, and the rows that need
// their logits on the host (several choices' first token) or every row
// (--cpu-sampling) brought back.
TEST(CudaRunner, SamplesOnTheDeviceWithTheCpuPathsTokensAndLogprobs) {
  CudaRunnerOptions o = small_pool();
  auto cpu = Engine::load(pagoda::testing::shared_path("models/stories260K.gguf"), engine_config(o));
  FakeDevice* device = nullptr;
  auto gpu = gpu_engine(o, {}, &device);
  std::vector<Request> reqs = crowd(8, 21);
  for (auto& r : reqs) r.sampling.logprobs = 4;
  reqs[1].n = 2;  // its first token comes back to the host, for both choices
  const auto want = cpu->generate(reqs);
  const auto got = gpu->generate(reqs);
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t c = 0; c < got[i].choices.size(); ++c) {
      const auto &g = got[i].choices[c], &w = want[i].choices[c];
      EXPECT_EQ(g.tokens, w.tokens) << "request " << i;
      ASSERT_EQ(g.logprobs.size(), w.logprobs.size());
      for (size_t t = 0; t < g.logprobs.size(); ++t) {
        EXPECT_EQ(g.logprobs[t].logprob, w.logprobs[t].logprob);
        EXPECT_EQ(g.logprobs[t].top, w.logprobs[t].top) << "request " << i << " token " << t;
      }
    }
  drained(*gpu);
  // 360 tokens; request 1's first two (one row, two choices) sampled on the
  // host, or its first alone when the fork found no room and the second
  // choice computed its prompt later.
  EXPECT_GE(device->rows_sampled(), 358);
  EXPECT_LE(device->rows_sampled(), 359);
}

Request seeded(std::mt19937& rng, uint64_t seed) {
  Request r = greedy(rng, 40 + rng() % 80, 30);
  r.sampling.temperature = 0.9f;
  r.sampling.top_k = 30;
  r.sampling.top_p = 0.9f;
  r.sampling.min_p = 0.02f;
  r.sampling.repetition_penalty = 1.1f;
  r.sampling.frequency_penalty = 0.3f;
  r.sampling.logit_bias = {{7, 2.0f}};
  r.sampling.seed = seed;
  return r;
}

TEST(CudaRunner, ASeededStreamOnTheDeviceIsTheSameThroughFailedPasses) {
  std::mt19937 rng(22);
  std::vector<Request> reqs;
  for (uint64_t i = 0; i < 12; ++i) reqs.push_back(seeded(rng, 100 + i));
  FakeDevice* device = nullptr;
  auto first = gpu_engine(small_pool(), {}, &device);  // alive while its device is read
  const auto clean = first->generate(reqs);
  EXPECT_GT(device->rows_sampled(), 12 * 29);
  // Out of memory and recoverable failures at random: halved and bisected
  // passes draw nothing, so each seed's tokens stay the same.
  auto faulty = gpu_engine(small_pool(), [](FakeDevice& d) { d.fail_at_random(0.15, 0.05, 23); });
  const auto again = faulty->generate(reqs);
  int compared = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(clean[i].choices[0].finish, FinishReason::length);
    if (again[i].choices[0].finish != FinishReason::length) continue;  // failed alone twice: ended
    EXPECT_EQ(again[i].choices[0].tokens, clean[i].choices[0].tokens) << "request " << i;
    ++compared;
  }
  EXPECT_GE(compared, 9);
  const auto s = drained(*faulty);
  EXPECT_GT(s.oom_retries + s.forward_retries, 2);
  // Different seeds draw different streams (the draw is not ignored).
  EXPECT_NE(clean[0].choices[0].tokens, clean[1].choices[0].tokens);
}

TEST(CudaRunner, CpuSamplingBringsEveryRowBack) {
  FakeDevice* device = nullptr;
  auto e = gpu_engine(small_pool(), {}, &device, /*cpu_sampling=*/true);
  for (const auto& c : e->generate(crowd(4, 24))) EXPECT_EQ(c.choices[0].finish, FinishReason::length);
  drained(*e);
  EXPECT_EQ(device->rows_sampled(), 0);
}

// A hybrid (a synthetic Qwen3.5: three Gated DeltaNet layers to one of
// attention), its recurrent state on the device: slots sized from the share,
// K/V for the attention layer only, and the same greedy tokens as the CPU
// engine through forks (n = 2: a state copied) and prefix-cache hits on
// shared prompts (checkpoints saved and restored: state copies again).
// A synthetic model file in the temp folder, with greedy()'s 512-token vocabulary.
std::string synthetic_file(SyntheticModelSpec spec) {
  spec.n_vocab = 512;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("pagoda-gpu-runner-" + spec.arch + ".gguf")).string();
  synthetic_model(spec).write(path);
  return path;
}

std::string hybrid_file() {
  SyntheticModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 4;
  spec.rope_dims = 8;
  return synthetic_file(spec);
}

// Twelve greedy requests, the second half extending the first half's
// prompts (prefix-cache hits: checkpoints restored), the first forked (n = 2).
std::vector<Request> hybrid_crowd(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Request> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(greedy(rng, 40 + rng() % 60, 30));
  for (int i = 6; i < 12; ++i) {
    reqs[size_t(i)].prompt = reqs[size_t(i - 6)].prompt;
    reqs[size_t(i)].prompt.push_back(TokenId(3 + i));
  }
  reqs[0].n = 2;
  return reqs;
}

TEST(CudaRunner, AHybridModelKeepsItsStateOnTheDevice) {
  const std::string path = hybrid_file();
  auto model = std::shared_ptr<Model>(Model::load(path, Residency::kInMemory));
  auto device = std::make_unique<FakeDevice>(model, 64 * kMiB);
  FakeDevice& d = *device;
  CudaRunnerOptions o = small_pool();
  CudaRunner r(model, std::move(device), o);
  EXPECT_EQ(r.state_slots(), o.max_num_seqs);  // one a sequence, by default
  EXPECT_EQ(r.state_checkpoints(), o.max_num_seqs);
  ASSERT_NE(d.states(), nullptr);
  EXPECT_EQ(d.states()->num_slots(), r.state_slots());
  EXPECT_FALSE(r.state_summary().empty());
  const StateCopy bad[] = {{0, 3 * o.max_num_seqs}}, same[] = {{2, 2}}, ok[] = {{0, 3 * o.max_num_seqs - 1}};
  EXPECT_THROW(r.copy_states(bad), InvalidArgument);
  EXPECT_THROW(r.copy_states(same), InvalidArgument);
  EXPECT_NO_THROW(r.copy_states(ok));
  o.state_slots = 3;
  o.state_checkpoints = 0;
  CudaRunner few(model, std::make_unique<FakeDevice>(model, 64 * kMiB), o);
  EXPECT_EQ(few.state_slots(), 3);
  EXPECT_EQ(few.state_checkpoints(), 0);
  std::filesystem::remove(path);
}

TEST(CudaRunner, AHybridModelsGreedyTokensAreTheCpuEngines) {
  const std::string path = hybrid_file();
  CudaRunnerOptions o = small_pool();
  EngineConfig cpu_cfg = engine_config(o);
  auto cpu = Engine::load(path, cpu_cfg);
  auto model = std::shared_ptr<Model>(Model::load(path, Residency::kInMemory));
  auto gpu = gpu_engine(o, {}, nullptr, false, model);
  const std::vector<Request> reqs = hybrid_crowd(5);
  const auto want = cpu->generate(reqs);
  const auto got = gpu->generate(reqs);
  expect_same_tokens(got, want);
  const auto s = drained(*gpu);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.state_slots_used, 0);
  EXPECT_GT(s.state_checkpoint_hits, 0);
  std::filesystem::remove(path);
}

// Failed passes (out of memory: halved; recoverable: bisected) leave each
// sequence's state where the next try reads it (a pass writes only the
// other buffer): every request that completes has the fault-free tokens.
TEST(CudaRunner, AHybridsStateSurvivesFailedPasses) {
  const std::string path = hybrid_file();
  CudaRunnerOptions o = small_pool();
  auto cpu = Engine::load(path, engine_config(o));
  auto model = std::shared_ptr<Model>(Model::load(path, Residency::kInMemory));
  auto gpu = gpu_engine(
      o, [](FakeDevice& d) { d.fail_at_random(0.08, 0.04, 31); }, nullptr, false, model);
  const std::vector<Request> reqs = hybrid_crowd(6);
  const auto want = cpu->generate(reqs);
  const auto got = gpu->generate(reqs);
  ASSERT_EQ(got.size(), want.size());
  int completed = 0;
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t c = 0; c < got[i].choices.size(); ++c) {
      if (got[i].choices[c].finish != FinishReason::length) continue;  // ended by a fault: a clear error
      ++completed;
      EXPECT_EQ(got[i].choices[c].tokens, want[i].choices[c].tokens) << "request " << i << " choice " << c;
    }
  const auto s = drained(*gpu);
  EXPECT_GT(completed, 10);
  EXPECT_GT(s.oom_retries + s.forward_retries, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.state_slots_used, 0);
  std::filesystem::remove(path);
}

// A model with sliding windows (a synthetic Gemma 3: five layers of a
// 32-position window to one of full attention), its pool in the CPU's KV
// groups: a page holds one group's layers, and the sliding groups give back
// the pages behind their windows. A pool of 256 tokens of every layer then
// holds a 480-token sequence (one group of every layer, 256 tokens), with
// the CPU engine's greedy tokens.
std::string sliding_file() {
  SyntheticModelSpec spec;
  spec.arch = "gemma3";
  spec.n_embd = 64;
  spec.n_ff = 128;
  spec.head_dim = 32;
  spec.n_head_kv = 2;
  spec.n_layer = 6;
  spec.sliding_window = 32;
  spec.sliding_pattern = 6;
  return synthetic_file(spec);
}

TEST(CudaRunner, SlidingWindowsGiveBackTheirPagesAsOnTheCpu) {
  const std::string path = sliding_file();
  CudaRunnerOptions o = small_pool();
  o.kv_cache_tokens = 256;
  o.max_batched_tokens = 64;  // a sliding group spans its window and one chunk
  auto model = std::shared_ptr<Model>(Model::load(path, Residency::kInMemory));
  std::mt19937 rng(9);
  std::vector<Request> reqs = {greedy(rng, 100, 380), greedy(rng, 40, 100), greedy(rng, 70, 100)};
  reqs[1].n = 2;  // a fork: its shared last page copied in its group
  {
    FakeDevice* d = nullptr;
    auto gpu = gpu_engine(o, {}, &d, false, model);
    ASSERT_EQ(d->kv()->num_groups(), 6);  // the full group, five sliding ones
    EXPECT_EQ(d->kv()->num_blocks(), 6 * 256 / 16);
    const auto want = Engine::load(path, engine_config(o))->generate(reqs);
    const auto got = gpu->generate(reqs);
    expect_same_tokens(got, want);
    EXPECT_EQ(got[0].choices[0].tokens.size(), 380u);
    const auto s = drained(*gpu);
    EXPECT_EQ(s.kv_blocks_used, 0);
  }
  // One group of every layer in the same memory: a sequence holds every position of every layer.
  o.hybrid_kv_cache = false;
  FakeDevice* d = nullptr;
  auto gpu = gpu_engine(o, {}, &d, false, model);
  EXPECT_EQ(d->kv()->num_groups(), 1);
  const auto got = gpu->generate({reqs[0]});
  EXPECT_LT(got[0].choices[0].tokens.size(), 380u) << got[0].choices[0].error;
  std::filesystem::remove(path);
}

TEST(CudaRunner, ABlockCopyOutsideThePoolIsNeverSent) {
  auto model = stories();
  CudaRunner r(model, std::make_unique<FakeDevice>(model, 64 * kMiB), small_pool());
  const BlockCopy bad[] = {{0, r.num_blocks()}};
  EXPECT_THROW(r.copy_blocks(bad), InvalidArgument);
  const BlockCopy ok[] = {{0, r.num_blocks() - 1}};
  EXPECT_NO_THROW(r.copy_blocks(ok));
}

}  // namespace
}  // namespace pagoda::gpu
