// Pagoda against llama.cpp v0.5.0 on the same files: 1B-shaped synthetic
// llama, qwen3 and gemma3 models (random weights; equal matrix shapes, so
// equal weight bytes), a Qwen3-30B-A3B-shaped qwen3moe (--models
// qwen3moe) and Qwen3.5-9B- / 35B-A3B-shaped hybrids (qwen35, qwen35moe), quantized to Q4_K_M by llama.cpp's own
// quantizer, and timed in turns, llama-bench's way: prefill tok/s of one prompt batch (pp512) and decode tok/s of
// single-token steps (tg128), on the same threads. llama.cpp is its prebuilt CPU libraries from npm
// (tests/testing/llama_cpp), loaded with dlopen (testing/llama_oracle.h), with its own defaults.
//
//   build/bench_llama_cpp_compare [--threads N] [--rounds R] [--models a,b] [--ftypes Q4_K_M,Q5_K_M] [--dir D]
//                                 [--prompt 512] [--files A.gguf,B.gguf [--mapped]]
// --files times files made elsewhere (a model too large to write in F16 and
// quantize here) instead; --mapped leaves Pagoda's weights in the file's
// map, as `pagoda serve` does when a copy would not fit. Each engine also
// reports its first token: from the start of the load, the file dropped from
// the page cache first, to the logits of a 16-token prompt.
// Prints each round, then the medians and the ratios: Pagoda / llama.cpp per
// case, and each case / the first for Pagoda (for the architectures, the
// cost of their pieces at equal weight bytes; for the formats, against
// Q4_K_M). CI runs it with --benchmark_min_time (as every bench_* binary):
// then 10M-shaped models, one round, a short prompt, so it never rots.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "testing/llama_cpp_libs.h"
#include "testing/llama_oracle.h"
#include "testing/npm_oracle.h"
#include "tools/synthetic.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// TinyLlama-1.1B's shape for every architecture (--quick: the 10M one);
// what differs is the block. qwen3moe: Qwen3-30B-A3B's layers (benchmark_shape).
SyntheticModelSpec spec_of(const std::string& arch, bool quick) {
  const std::map<std::string, std::string> shapes = {
      {"qwen3moe", "30b-a3b"}, {"gpt-oss", "gpt-oss-20b"}, {"qwen35", "9b-hybrid"}, {"qwen35moe", "35b-a3b-hybrid"}};
  const auto shape = shapes.find(arch);
  SyntheticModelSpec s = benchmark_shape(shape != shapes.end() && !quick ? shape->second : quick ? "10m" : "1b");
  s.arch = arch;
  if (arch == "gemma3") s.sliding_window = 512, s.sliding_pattern = 6;  // Gemma 3 1B's window and pattern
  if ((arch == "qwen3moe" || arch == "qwen35moe") && quick) s.n_expert = 16, s.n_expert_used = 4, s.n_ff_expert = 256;
  if (arch == "gpt-oss" && quick) {  // its features, at the 10M shape's size
    s = benchmark_shape("gpt-oss-20b");
    s.n_vocab = 10240, s.n_embd = 256, s.n_ff = 256, s.n_head = 4, s.n_head_kv = 2;
    s.n_expert = 8, s.n_expert_used = 2, s.n_ff_expert = 256;
  }
  s.type = TensorType::F16;
  return s;
}

// The file's pages out of the page cache, so a load reads it from the disk.
void drop_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Pagoda serving a file from its map at once: the load, then a 16-token prompt's logits.
double pagoda_first_token_s(const std::string& path, int threads) {
  const auto t0 = Clock::now();
  const auto model = Model::load(path, Residency::kMapped);
  ThreadPool pool(threads);
  std::unique_ptr<StateStorage> states;
  if (model->config().n_recurrent_layers() > 0) states = std::make_unique<StateStorage>(model->config(), 1);
  KvStorage kv(model->config(), 1, 16);
  Batch batch;
  const std::vector<int32_t> table = {0};
  batch.add_sequence(table);
  for (int p = 0; p < 16; ++p) batch.add(int32_t(3 + p * 7919 % (model->config().n_vocab - 3)), 0, p, p == 15);
  if (states) batch.set_state(0, kNoState, 0);
  std::vector<float> logits;
  model->forward(batch, kv, pool, logits, states.get());
  return seconds_since(t0);
}

// Pagoda's forward pass, through Model directly: one n_prompt batch
// (after an untimed one), then n_gen single-token steps after an untimed one,
// each on empty KV.
testing::LlamaOracle::Speed pagoda_speed(const std::string& path, int threads, int n_prompt, int n_gen,
                                         Residency residency) {
  const auto model = Model::load(path, residency);
  ThreadPool pool(threads);
  // A hybrid's recurrent state: one slot, its first buffer written by each pass from zeros or read by the next.
  std::unique_ptr<StateStorage> states;
  if (model->config().n_recurrent_layers() > 0) states = std::make_unique<StateStorage>(model->config(), 1);
  constexpr int kBlock = 16;
  const int blocks = (n_prompt + n_gen + 1 + kBlock - 1) / kBlock;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) table[size_t(b)] = b;
  std::vector<float> logits;
  testing::LlamaOracle::Speed out;
  for (const bool timed : {false, true}) {  // the first pass untimed, as for llama.cpp
    KvStorage kv(model->config(), blocks, kBlock);
    Batch batch;
    batch.add_sequence(table);
    for (int p = 0; p < n_prompt; ++p)
      batch.add(int32_t(3 + p * 7919 % (model->config().n_vocab - 3)), 0, p, p + 1 == n_prompt);
    if (states) batch.set_state(0, kNoState, 0);
    const auto t0 = Clock::now();
    model->forward(batch, kv, pool, logits, states.get());
    if (timed) out.prefill_tok_s = n_prompt / seconds_since(t0);
  }
  KvStorage kv(model->config(), blocks, kBlock);
  auto step = [&](int pos) {
    Batch batch;
    batch.add_sequence(table);
    batch.add(int32_t(3 + pos * 7919 % (model->config().n_vocab - 3)), 0, pos, true);
    if (states) batch.set_state(0, pos == 0 ? kNoState : (pos + 1) % 2, pos % 2);
    model->forward(batch, kv, pool, logits, states.get());
  };
  step(0);
  const auto t0 = Clock::now();
  for (int i = 1; i <= n_gen; ++i) step(i);
  out.decode_tok_s = n_gen / seconds_since(t0);
  return out;
}

// The file types llama.cpp's quantizer writes that Pagoda reads (--ftypes).
const std::map<std::string, testing::LlamaFtype> kFtypes = {
    {"Q8_0", testing::LlamaFtype::kQ8_0},     {"Q4_0", testing::LlamaFtype::kQ4_0},
    {"Q5_0", testing::LlamaFtype::kQ5_0},     {"Q5_1", testing::LlamaFtype::kQ5_1},
    {"Q2_K", testing::LlamaFtype::kQ2_K},     {"Q3_K_M", testing::LlamaFtype::kQ3_K_M},
    {"Q4_K_M", testing::LlamaFtype::kQ4_K_M}, {"Q5_K_M", testing::LlamaFtype::kQ5_K_M},
    {"Q6_K", testing::LlamaFtype::kQ6_K},     {"IQ4_NL", testing::LlamaFtype::kIQ4_NL},
    {"IQ4_XS", testing::LlamaFtype::kIQ4_XS}, {"BF16", testing::LlamaFtype::kBF16},
    {"F16", testing::LlamaFtype::kF16},       {"MXFP4_MOE", testing::LlamaFtype::kMXFP4_MOE},
};

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  for (size_t at = 0, next; at <= list.size(); at = next + 1) {
    next = std::min(list.find(',', at), list.size());
    out.push_back(list.substr(at, next - at));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int run(int argc, char** argv) {
  bool quick = false, mapped = false;
  std::vector<std::string> given;
  int threads = std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN))), rounds = 3, n_prompt_arg = 0;
  std::vector<std::string> archs = {"llama", "qwen3", "gemma3"}, ftypes = {"Q4_K_M"};
  fs::path dir = fs::temp_directory_path() / fmt::format("pagoda-vs-llama-{}", getpid());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a.starts_with("--benchmark") || a == "--quick") {
      quick = true;
    } else if (a == "--threads") {
      threads = std::stoi(value());
    } else if (a == "--rounds") {
      rounds = std::stoi(value());
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--prompt") {
      n_prompt_arg = std::stoi(value());
    } else if (a == "--files") {
      given = split_list(value());
    } else if (a == "--mapped") {
      mapped = true;
    } else if (a == "--models") {
      archs = split_list(value());
    } else if (a == "--ftypes") {
      ftypes = split_list(value());
      for (const auto& t : ftypes)
        if (!kFtypes.contains(t)) return fmt::print(stderr, "unknown file type {}\n", t), 2;
    } else {
      fmt::print(stderr, "unknown option {}\n", a);
      return 2;
    }
  }
  if (const std::string missing = testing::npm_package_missing(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
      !missing.empty()) {
    fmt::print("llama.cpp comparison skipped: {}\n", missing);
    return 0;
  }
  if (quick) rounds = 1;
  const int n_prompt = n_prompt_arg > 0 ? n_prompt_arg : quick ? 64 : 512, n_gen = quick ? 8 : 128;
  if (given.empty()) fs::create_directories(dir);
  auto& llama_cpp = testing::LlamaOracle::get();
  // Each case: an architecture in a file type, quantized from the same F16 file.
  std::vector<std::string> cases;
  std::map<std::string, std::string> files;
  for (const auto& f : given) {
    cases.push_back(fs::path(f).filename().string());
    files[cases.back()] = f;
  }
  for (const auto& arch : given.empty() ? archs : std::vector<std::string>{}) {
    const fs::path f16 = dir / (arch + "-f16.gguf");
    synthetic_model(spec_of(arch, quick)).write(f16.string());
    for (const auto& t : ftypes) {
      const std::string name = arch + " " + t;
      const fs::path q = dir / (arch + "-" + t + ".gguf");
      llama_cpp.quantize(f16.string(), q.string(), kFtypes.at(t));
      cases.push_back(name);
      files[name] = q.string();
    }
    fs::remove(f16);
  }
  fmt::print("{} threads, prompt {} tokens, {} decode steps, {} round(s), {}{}\n", threads, n_prompt, n_gen, rounds,
             given.empty() ? "files by llama.cpp's quantizer" : "given files",
             mapped ? ", Pagoda's weights left in the map" : "");
  std::map<std::string, std::vector<double>> pp, tg, ll_pp, ll_tg, first, ll_first;
  for (int r = 0; r < rounds; ++r)
    for (const auto& c : cases) {  // in turns: a VM's speed drifts within minutes
      drop_from_page_cache(files[c]);
      const double p_first = pagoda_first_token_s(files[c], threads);
      const auto p =
          pagoda_speed(files[c], threads, n_prompt, n_gen, mapped ? Residency::kMapped : Residency::kInMemory);
      drop_from_page_cache(files[c]);
      const auto l = llama_cpp.speed(files[c], threads, n_prompt, n_gen);
      pp[c].push_back(p.prefill_tok_s), tg[c].push_back(p.decode_tok_s), first[c].push_back(p_first);
      ll_pp[c].push_back(l.prefill_tok_s), ll_tg[c].push_back(l.decode_tok_s), ll_first[c].push_back(l.first_token_s);
      fmt::print(
          "round {} {:16}: prefill {:7.1f} vs {:7.1f} tok/s, decode {:6.1f} vs {:6.1f} tok/s, first token {:.2f} vs "
          "{:.2f} s\n",
          r + 1, c, p.prefill_tok_s, l.prefill_tok_s, p.decode_tok_s, l.decode_tok_s, p_first, l.first_token_s);
    }
  fmt::print(
      "\n| model | Pagoda prefill | llama.cpp prefill | ratio | Pagoda decode | llama.cpp decode | ratio | "
      "prefill / first's | decode / first's |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : cases)
    fmt::print("| {} | {:.1f} | {:.1f} | {:.2f}x | {:.1f} | {:.1f} | {:.2f}x | {:.2f} | {:.2f} |\n", c, median(pp[c]),
               median(ll_pp[c]), median(pp[c]) / median(ll_pp[c]), median(tg[c]), median(ll_tg[c]),
               median(tg[c]) / median(ll_tg[c]), median(pp[c]) / median(pp[cases.front()]),
               median(tg[c]) / median(tg[cases.front()]));
  for (const auto& c : cases)
    fmt::print("first token from a cold load, {}: Pagoda {:.2f} s, llama.cpp {:.2f} s\n", c, median(first[c]),
               median(ll_first[c]));
  if (given.empty()) fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::run(argc, argv); }
