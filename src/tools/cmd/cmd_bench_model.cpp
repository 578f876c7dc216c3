// `pagoda bench-model`: the speed of the forward pass against the machine's
// ceilings. Writes synthetic Llama models (random weights run exactly as fast
// as real ones) with the project's GGUF writer and quantizer into a temporary
// folder, measures the machine's read bandwidth and peak FMA rate in the same
// run, then times Model::forward directly (no engine, no scheduler):
// prefill of a prompt, and decode at several batch sizes and contexts.
// Ratios relate the figures to the ceilings: batch-1 decode moves every weight
// matrix once per token, so its bytes/s cannot exceed the read bandwidth;
// prefill in f32 FMAs cannot exceed the peak FLOP/s. A ratio above 1 means a
// wrong measurement (or, for the 100M model, weights that fit in the cache),
// except the prefill of the quantized formats, whose integer kernels
// (vpdpbusd: four 8-bit products per 32-bit lane) can run past the f32 peak.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <hwy/targets.h>
#include <strings.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <fstream>
#include <random>

#include "tools/cmd/commands.h"
#include "tools/machine_limits.h"
#include "model/model.h"
#include "tools/quantize_model.h"
#include "tools/synthetic.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda::tools {
using cli::Command;
namespace {

namespace fs = std::filesystem;

struct BenchModelOpts {
  bool quick = false;
  int threads = 0;
  std::vector<std::string> models = {"100m", "1b"};
  std::vector<std::string> types = {"f16", "q8_0", "q4_k"};
  std::vector<int> batches = {1, 8, 16, 32, 64};
  int prompt = 512;   // prefill tokens
  int context = 512;  // KV positions each sequence already has in the second decode run
  int steps = 0;      // timed decode steps per measurement; 0: 5 (2 with --quick)
  std::string dir;
  bool keep = false;
  std::string cache;  // a folder whose model files are reused and kept
  bool mmap = false;  // map the model files, as `serve --mmap` does
  bool json = false;
  std::string json_file;  // also write the JSON here
  std::string simd;       // a Highway target to run as if the CPU had no wider one, e.g. AVX2
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The matrices a token passes through: the layers' dense ones, the share of
// the experts it is routed to (n_used of n_expert), and the output.
struct WeightTotals {
  uint64_t layer_bytes = 0, layer_elems = 0, output_bytes = 0, output_elems = 0;
  uint64_t expert_bytes = 0, expert_elems = 0;  // all experts'
  double expert_share = 0;                      // of them, what a token reads
  uint64_t active_bytes() const { return layer_bytes + uint64_t(double(expert_bytes) * expert_share); }
  uint64_t active_elems() const { return layer_elems + uint64_t(double(expert_elems) * expert_share); }
};

bool is_expert(const Matrix& m) { return m.name.find("_exps.weight[") != std::string::npos; }

WeightTotals weight_totals(const ModelWeights& w, const ModelConfig& c) {
  WeightTotals t;
  auto add = [](const Matrix& m, uint64_t& bytes, uint64_t& elems) {
    bytes += uint64_t(m.rows) * m.row_bytes;
    elems += uint64_t(m.rows) * uint64_t(m.cols);
  };
  for (const auto& l : w.layers)
    for (const Matrix* m : l.matrices())
      is_expert(*m) ? add(*m, t.expert_bytes, t.expert_elems) : add(*m, t.layer_bytes, t.layer_elems);
  add(w.output, t.output_bytes, t.output_elems);
  if (c.moe.n_expert > 0) t.expert_share = double(c.moe.n_used) / c.moe.n_expert;
  return t;
}

// Sequences with their own blocks in one KV pool, as the engine lays them out.
class Sequences {
 public:
  Sequences(int count, int positions, int block_size) : blocks_per_seq_((positions + block_size - 1) / block_size) {
    for (int s = 0; s < count; ++s) {
      tables_.emplace_back(size_t(blocks_per_seq_));
      for (int b = 0; b < blocks_per_seq_; ++b) tables_.back()[size_t(b)] = s * blocks_per_seq_ + b;
    }
  }
  int num_blocks() const { return int(tables_.size()) * blocks_per_seq_; }
  // A batch of one token at `pos` from each of the first n sequences.
  Batch decode_batch(int n, int pos, std::mt19937& rng, int vocab) const {
    Batch b;
    for (int s = 0; s < n; ++s) {
      const int seq = b.add_sequence(tables_[size_t(s)]);
      b.add(int32_t(rng() % uint32_t(vocab)), seq, pos, true);
      set_state(b, seq, pos);
    }
    return b;
  }
  Batch prefill_batch(int begin, int end, std::mt19937& rng, int vocab, bool last) const {
    Batch b;
    const int seq = b.add_sequence(tables_[0]);
    for (int p = begin; p < end; ++p) b.add(int32_t(rng() % uint32_t(vocab)), seq, p, last && p == end - 1);
    set_state(b, seq, begin);
    return b;
  }
  // A hybrid model's state buffers: sequence s reads slot s's first (zeros
  // at position 0) and writes its second; what the state holds costs nothing.
  bool recurrent = false;

 private:
  void set_state(Batch& b, int seq, int pos) const {
    if (recurrent) b.set_state(seq, pos == 0 ? kNoState : 2 * seq, 2 * seq + 1);
  }

  int blocks_per_seq_;
  std::vector<std::vector<int32_t>> tables_;
};

struct DecodeFigure {
  int batch = 0, context = 0;
  double step_s = 0, tokens_per_s = 0;
};

struct Result {
  std::string model, type;
  uint64_t params = 0, file_bytes = 0, weight_bytes_per_token = 0;
  double prefill_s = 0, prefill_tokens_per_s = 0, prefill_flops = 0;
  std::vector<DecodeFigure> decode;
  double bandwidth_ratio = 0, fma_ratio = 0, batch16_speedup = 0;
  // Prefill's ops/s over the int8 dot-product peak: quantized types only (0:
  // not measured), as their kernels multiply 8-bit codes.
  double int8_ratio = 0;
  // Batch-1 decode bytes/s over the read bandwidth of the same moment (a
  // ReadProbe pass just before each step), median of the steps; 0: not measured.
  double bandwidth_now_ratio = 0;
  // The same over a plain read of the step's matrices in forward order just
  // before it (read_in_order): the kernels' share of the gap, as the
  // machine's memory leaves no kernel more than this.
  double read_now_ratio = 0;
  uint64_t pool_loops_per_step = 0;  // parallel loops that woke the workers, one batch-1 decode step
};

struct Machine {
  int threads = 0;
  ReadBandwidth bandwidth;
  PeakFma fma;
  PeakInt8 int8;
  double pool_round_trip_s = 0;
};

// A batch-1 step's weight reads in forward order: per layer Q, K, V, the
// attention output, gate, up, down (or the router and n_used experts); then
// the output matrix.
std::vector<ByteRange> step_reads(const ModelWeights& w, const ModelConfig& c) {
  std::vector<ByteRange> r;
  auto add = [&](const Matrix& m) { r.push_back({m.data, size_t(m.rows) * m.row_bytes}); };
  for (const auto& l : w.layers) {
    int experts = 0;  // matrices of experts taken: 3 per expert
    for (const Matrix* m : l.matrices())
      if (!is_expert(*m) || experts++ < 3 * c.moe.n_used) add(*m);
  }
  add(w.output);
  return r;
}

const DecodeFigure* find_decode(const Result& r, int batch, int context) {
  for (const auto& d : r.decode)
    if (d.batch == batch && d.context == context) return &d;
  return nullptr;
}

Result measure(const BenchModelOpts& o, const Machine& m, const std::string& model_name, const std::string& type,
               const std::string& path, ThreadPool& pool, CacheEvictor* evictor, ReadProbe* probe) {
  const int steps = o.steps > 0 ? o.steps : (o.quick ? 2 : 5);
  auto model = Model::load(path, o.mmap ? Residency::kMapped : Residency::kInMemory);
  const ModelConfig& cfg = model->config();
  const WeightTotals w = weight_totals(model->weights(), cfg);
  Result r;
  r.model = model_name;
  r.type = type;
  r.file_bytes = fs::file_size(path);
  r.params = w.layer_elems + w.expert_elems + w.output_elems + uint64_t(cfg.n_vocab) * uint64_t(cfg.n_embd);
  r.weight_bytes_per_token = w.active_bytes() + w.output_bytes;

  // The engine's KV layout: F32, blocks of 16 slots.
  const int block_size = 16;
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const int positions = std::max(o.prompt, o.context + steps + 1);
  Sequences seqs(max_batch, positions, block_size);
  KvStorage kv(cfg, seqs.num_blocks(), block_size);
  std::unique_ptr<StateStorage> states;
  if (cfg.n_recurrent_layers() > 0) states = std::make_unique<StateStorage>(cfg, max_batch);
  seqs.recurrent = states != nullptr;
  std::mt19937 rng(7);
  std::vector<float> logits;

  // Warm-up: one step touches every weight page of the fresh mapping.
  model->forward(seqs.decode_batch(1, 0, rng, cfg.n_vocab), kv, pool, logits, states.get());

  // Prefill in chunks of the scheduler's default token budget (one chunk for 512).
  const int chunk = 2048;
  const double t0 = now_s();
  for (int p = 0; p < o.prompt; p += chunk)
    model->forward(seqs.prefill_batch(p, std::min(o.prompt, p + chunk), rng, cfg.n_vocab, p + chunk >= o.prompt), kv,
                   pool, logits, states.get());
  r.prefill_s = now_s() - t0;
  r.prefill_tokens_per_s = o.prompt / r.prefill_s;
  // Matrix multiply-adds of every prompt token, the output row of the last
  // one, and causal attention (Q.K and weights.V: 2 x (pos+1) x q_dim per layer).
  const double T = o.prompt;
  r.prefill_flops = 2 * T * double(w.active_elems()) + 2 * double(w.output_elems) +
                    4.0 * (cfg.n_layer - cfg.n_recurrent_layers()) * cfg.q_dim() * (T * (T + 1) / 2);
  r.fma_ratio = r.prefill_flops / r.prefill_s / m.fma.flops_per_s;
  if (type != "f16" && m.int8.ops_per_s > 0) r.int8_ratio = r.prefill_flops / r.prefill_s / m.int8.ops_per_s;

  for (int context : {0, o.context}) {
    for (int b : o.batches) {
      std::vector<double> times, now_ratios, read_ratios;
      const bool probed = probe && b == 1 && context == 0;
      const std::vector<ByteRange> reads = probed ? step_reads(model->weights(), cfg) : std::vector<ByteRange>{};
      for (int step = 0; step <= steps; ++step) {  // step 0 warms up
        const Batch batch = seqs.decode_batch(b, context + step, rng, cfg.n_vocab);
        const double bandwidth_now = probed ? probe->measure() : 0;
        if (evictor) evictor->evict();  // every step reads its weights from DRAM
        double read_now = 0;
        if (probed) {
          read_now = read_in_order(pool, reads);
          if (evictor) evictor->evict();
        }
        const uint64_t loops0 = pool.wakeups();
        const double s0 = now_s();
        model->forward(batch, kv, pool, logits, states.get());
        const double dt = now_s() - s0;
        if (step > 0) times.push_back(dt);
        if (step > 0 && probed) {
          now_ratios.push_back(double(r.weight_bytes_per_token) / dt / bandwidth_now);
          read_ratios.push_back(double(r.weight_bytes_per_token) / dt / read_now);
        }
        if (b == 1 && context == 0) r.pool_loops_per_step = pool.wakeups() - loops0;
      }
      if (probed) {
        r.bandwidth_now_ratio = median(now_ratios);
        r.read_now_ratio = median(read_ratios);
      }
      DecodeFigure d{b, context, median(times), 0};
      d.tokens_per_s = b / d.step_s;
      r.decode.push_back(d);
      spdlog::info("{} {} decode batch {} context {}: {:.1f} tok/s", model_name, type, b, context, d.tokens_per_s);
    }
  }
  if (const auto* d1 = find_decode(r, 1, 0)) {
    r.bandwidth_ratio = double(r.weight_bytes_per_token) * d1->tokens_per_s / m.bandwidth.bytes_per_s;
    if (const auto* d16 = find_decode(r, 16, 0)) r.batch16_speedup = d16->tokens_per_s / d1->tokens_per_s;
  }
  return r;
}

// The ceilings measured again after the models ran: on a VM whose
// neighbours move memory speed (and steal cycles) by up to 2x within
// minutes, one measurement taken before can be a slow moment, and a ratio
// above 1 followed (decode against bandwidth 1.2, prefill against the FMA
// peak 1.6-1.9 for the integer kernels). The best of every read pass of the
// run is the bandwidth ceiling (those before and after the models, and
// `probed_bytes_per_s`, the best of the passes before each batch-1 step: once
// both of the former fell in slow moments, and the batch-1 ratios read 0.90
// and 0.96 while against the pass before each step they were 0.89 and 0.54);
// the better of the two FMA measurements is the peak. The ratios are taken
// against them.
void remeasure_ceilings(Machine& m, ThreadPool& pool, std::vector<Result>& results, double probed_bytes_per_s) {
  ReadBandwidth bw = measure_read_bandwidth(pool, m.bandwidth.buffer_bytes);
  bw.bytes_per_s = std::max(bw.bytes_per_s, probed_bytes_per_s);
  if (bw.bytes_per_s > m.bandwidth.bytes_per_s) {
    for (auto& r : results) r.bandwidth_ratio *= m.bandwidth.bytes_per_s / bw.bytes_per_s;
    m.bandwidth = bw;
  }
  const PeakFma fma = measure_peak_fma(pool);
  if (fma.flops_per_s > m.fma.flops_per_s) {
    for (auto& r : results) r.fma_ratio *= m.fma.flops_per_s / fma.flops_per_s;
    m.fma = fma;
  }
  const PeakInt8 int8 = measure_peak_int8(pool);
  if (int8.ops_per_s > m.int8.ops_per_s) {
    for (auto& r : results) r.int8_ratio *= m.int8.ops_per_s / int8.ops_per_s;
    m.int8 = int8;
  }
}

std::string file_type_name(const std::string& type) {
  if (type == "q4_k") return "Q4_K_M";
  std::string upper = type;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  return upper;  // Q4_0, Q8_0, or one type throughout (Q5_K, IQ4_XS, ...)
}

// Generates one model (F16), derives the quantized files, measures each type.
std::vector<Result> bench_model(const BenchModelOpts& o, const Machine& m, const std::string& name, const fs::path& dir,
                                ThreadPool& pool, CacheEvictor* evictor, ReadProbe* probe, nlohmann::json& setup) {
  SyntheticModelSpec spec = benchmark_shape(name);
  spec.type = TensorType::F16;
  const fs::path f16 = dir / fmt::format("{}-f16.gguf", name);
  nlohmann::json& s = setup[name];
  const bool cached = !o.cache.empty();
  if (!cached || !fs::exists(f16)) {
    spdlog::info("generating the {} model (F16)", name);
    double t0 = now_s();
    const GgufWriter writer = synthetic_model(spec);
    s["generate_s"] = now_s() - t0;
    t0 = now_s();
    writer.write(f16.string());
    s["write_s"] = now_s() - t0;
  }
  std::vector<Result> results;
  for (const auto& type : o.types) {
    fs::path path = f16;
    if (type != "f16") {
      path = dir / fmt::format("{}-{}.gguf", name, type);
    }
    if (type != "f16" && !(cached && fs::exists(path))) {
      spdlog::info("quantizing the {} model to {}", name, file_type_name(type));
      const double t0 = now_s();
      quantize_model_file(f16.string(), path.string(), *quantize_target_from_name(type), pool.size());
      s["quantize_" + type + "_s"] = now_s() - t0;
    }
    spdlog::info("measuring {} {}", name, type);
    results.push_back(measure(o, m, name, type, path.string(), pool, evictor, probe));
    if (!o.keep && !cached && path != f16) fs::remove(path);
  }
  if (!o.keep && !cached) fs::remove(f16);
  return results;
}

void print_table(const BenchModelOpts& o, const Machine& m, const std::vector<Result>& results) {
  fmt::print(
      "machine: {} threads; read bandwidth {:.1f} GB/s (best of 5 passes x 1-8 streams over {} MiB); peak FMA {:.1f} "
      "GFLOP/s "
      "(f32, {}, {} lanes){}; pool wake-up {:.1f} us per parallel loop\n",
      m.threads, m.bandwidth.bytes_per_s / 1e9, m.bandwidth.buffer_bytes >> 20, m.fma.flops_per_s / 1e9, m.fma.target,
      m.fma.lanes,
      o.quick ? ""
              : "; both the best of the run's measurements (before and after the models; the bandwidth also before "
                "each batch-1 step)",
      m.pool_round_trip_s * 1e6);
  if (m.int8.ops_per_s > 0)
    fmt::print("int8 dot-product peak {:.1f} GOP/s ({}; /int8: prefill's multiply-adds x 2 over it)\n",
               m.int8.ops_per_s / 1e9, m.int8.instruction);
  fmt::print("weights: {}\n",
             o.mmap ? "mapped from the files (--mmap)" : "read into memory (huge pages where available)");
  // Two header lines: column groups, then units and batch sizes.
  const size_t group = 8 * o.batches.size() + 2;
  fmt::print("\n{:<5} {:<5} {:>8} {:>9} {:>13} {:<{}}{:<{}} {:<13} {:>7}\n", "model", "type", "weights", "prefill",
             "FLOP/s", " decode tok/s, context 0, batch", group, fmt::format(" context {}, batch", o.context), group,
             "b1 B/s", "b16/b1");
  fmt::print("{:<5} {:<5} {:>8} {:>9} {:>6} {:>6} ", "", "", "MB/tok", "tok/s", "/peak", "/int8");
  for (int context = 0; context < 2; ++context) {
    fmt::print(" ");
    for (int b : o.batches) fmt::print("{:>8}", b);
    fmt::print(" ");
  }
  fmt::print(" {:>6} {:>6} {:>6} {:>7}\n", "/BW", "/now", "/read", "");
  for (const auto& r : results) {
    auto ratio = [](double x) { return x > 0 ? fmt::format("{:.3f}", x) : std::string("-"); };
    fmt::print("{:<5} {:<5} {:>8.0f} {:>9.1f} {:>6.3f} {:>6} ", r.model, r.type, r.weight_bytes_per_token / 1e6,
               r.prefill_tokens_per_s, r.fma_ratio, ratio(r.int8_ratio));
    for (int context : {0, o.context}) {
      fmt::print(" ");
      for (int b : o.batches) fmt::print("{:>8.1f}", find_decode(r, b, context)->tokens_per_s);
      fmt::print(" ");
    }
    fmt::print(" {:>6.3f} {:>6} {:>6} {:>7.2f}\n", r.bandwidth_ratio, ratio(r.bandwidth_now_ratio),
               ratio(r.read_now_ratio), r.batch16_speedup);
  }
  if (!o.quick)
    fmt::print(
        "(b1 B/s, each batch-1 step's weight bytes/s, median of the steps, over: /now a read pass just before it; "
        "/read a plain read of its matrices in its order and split, just before it)\n");
  // Each woken loop costs about one round trip: its share of a batch-1 step.
  fmt::print("\npool overhead at batch 1, context 0 (loops per step x wake-up / step time):");
  for (const auto& r : results)
    if (const auto* d1 = find_decode(r, 1, 0))
      fmt::print(" {} {}: {} loops, {:.1f}%;", r.model, r.type, r.pool_loops_per_step,
                 100.0 * double(r.pool_loops_per_step) * m.pool_round_trip_s / d1->step_s);
  fmt::print("\n");
  // The binding goals of the 1B model.
  bool header = false;
  for (const auto& r : results) {
    if (r.model != "1b") continue;
    if (!header) fmt::print("\ngoals (1b):\n"), header = true;
    auto goal = [&](const std::string& what, double value, double target) {
      fmt::print("  {:<5} {:<38} {:>6.3f} (goal >= {:.2f}) {}\n", r.type, what, value, target,
                 value >= target ? "met" : "MISSED");
    };
    if (r.type == "q8_0") goal("batch-1 decode bytes/s / bandwidth", r.bandwidth_ratio, 0.9);
    if (r.type == "q4_k") goal("batch-1 decode bytes/s / bandwidth", r.bandwidth_ratio, 0.8);
    goal("prefill FLOP/s / peak FMA", r.fma_ratio, 0.4);
    if (r.int8_ratio > 0) goal("prefill ops/s / int8 peak", r.int8_ratio, 0.5);
    goal("batch-16 / batch-1 decode tok/s", r.batch16_speedup, 2.5);
  }
}

nlohmann::json to_json(const BenchModelOpts& o, const Machine& m, const std::vector<Result>& results,
                       const nlohmann::json& setup, double wall_s) {
  nlohmann::json j;
  j["machine"] = {{"threads", m.threads},
                  {"read_bandwidth_bytes_per_s", m.bandwidth.bytes_per_s},
                  {"bandwidth_buffer_bytes", m.bandwidth.buffer_bytes},
                  {"peak_fma_flops_per_s", m.fma.flops_per_s},
                  {"simd_target", m.fma.target},
                  {"f32_lanes", m.fma.lanes},
                  {"peak_int8_ops_per_s", m.int8.ops_per_s},
                  {"int8_instruction", m.int8.instruction},
                  {"pool_round_trip_s", m.pool_round_trip_s}};
  j["prompt_tokens"] = o.prompt;
  j["context_tokens"] = o.context;
  j["weights_mapped"] = o.mmap;
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json d = nlohmann::json::array();
    for (const auto& x : r.decode)
      d.push_back({{"batch", x.batch}, {"context", x.context}, {"step_s", x.step_s}, {"tokens_per_s", x.tokens_per_s}});
    j["results"].push_back({{"model", r.model},
                            {"type", r.type},
                            {"params", r.params},
                            {"file_bytes", r.file_bytes},
                            {"weight_bytes_per_token", r.weight_bytes_per_token},
                            {"prefill_s", r.prefill_s},
                            {"prefill_tokens_per_s", r.prefill_tokens_per_s},
                            {"prefill_flops", r.prefill_flops},
                            {"decode", d},
                            {"bandwidth_ratio", r.bandwidth_ratio},
                            {"bandwidth_now_ratio", r.bandwidth_now_ratio},
                            {"read_now_ratio", r.read_now_ratio},
                            {"fma_ratio", r.fma_ratio},
                            {"int8_ratio", r.int8_ratio},
                            {"batch16_speedup", r.batch16_speedup},
                            {"pool_loops_per_step", r.pool_loops_per_step}});
  }
  j["setup_s"] = setup;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  j["peak_rss_bytes"] = uint64_t(u.ru_maxrss) * 1024;
  j["wall_s"] = wall_s;
  return j;
}

// A fresh folder under `parent` for the model files.
fs::path make_temp_dir(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && *tmp ? tmp : "/tmp";
  }
  std::string pattern = (fs::path(base) / "pagoda-bench-XXXXXX").string();
  if (!mkdtemp(pattern.data())) fail("bench-model: cannot create a folder under {}", base);
  return pattern;
}

// Makes every kernel dispatch to the target named `name` (as Highway names
// them: AVX2, AVX3, AVX3_DL, ...), as on a CPU without the wider ones: one
// machine measures the kernels of several.
void force_simd_target(const std::string& name) {
  std::string known;
  for (const int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (strcasecmp(hwy::TargetName(t), name.c_str()) == 0) return hwy::SetSupportedTargetsForTest(t);
    known += fmt::format("{}{}", known.empty() ? "" : ", ", hwy::TargetName(t));
  }
  fail<InvalidArgument>("bench-model: --simd {}: not a target this CPU runs ({})", name, known);
}

int run_bench_model(BenchModelOpts o) {
  if (o.quick) o.models = {"10m"};
  if (!o.simd.empty()) force_simd_target(o.simd);
  for (const auto& m : o.models) benchmark_shape(m);
  for (const auto& t : o.types)
    if (t != "f16" && !quantize_target_from_name(t))
      fail<InvalidArgument>(
          "bench-model: unknown type '{}' (f16, q8_0, q4_k, q4_0, q5_1, iq4_nl, q2_k, q3_k, q5_k, q6_k, iq4_xs, mxfp4)",
          t);
  if (o.batches.empty() || *std::min_element(o.batches.begin(), o.batches.end()) < 1 || o.prompt < 1 || o.context < 1 ||
      o.steps < 0)
    fail<InvalidArgument>("bench-model: batches, --prompt and --context must be positive");
  if (!std::getenv("PAGODA_LOG")) spdlog::set_level(o.json ? spdlog::level::warn : spdlog::level::info);
  const double t0 = now_s();

  ThreadPool pool(o.threads);
  Machine m;
  m.threads = pool.size();
  spdlog::info("measuring the machine: read bandwidth, peak FMA and int8, pool wake-up ({} threads)", m.threads);
  // --quick reads 1 GiB, the least that is still larger than the caches of
  // common machines: its 10M model is cache-resident anyway (see the test).
  m.bandwidth = measure_read_bandwidth(pool, o.quick ? size_t(1) << 30 : default_bandwidth_buffer_bytes());
  m.fma = measure_peak_fma(pool);
  m.int8 = measure_peak_int8(pool);
  m.pool_round_trip_s = measure_pool_round_trip(pool);

  if (!o.cache.empty()) fs::create_directories(o.cache);
  const fs::path dir = o.cache.empty() ? make_temp_dir(o.dir) : fs::path(o.cache);
  const bool remove_dir = !o.keep && o.cache.empty();
  std::vector<Result> results;
  nlohmann::json setup = nlohmann::json::object();
  // --quick's model lives in the caches anyway (see the CLI test); the others
  // decode from DRAM.
  std::unique_ptr<CacheEvictor> evictor;
  std::unique_ptr<ReadProbe> probe;  // the read speed of the moment, before each batch-1 step
  if (!o.quick) {
    evictor = std::make_unique<CacheEvictor>(pool);
    probe = std::make_unique<ReadProbe>(pool, m.bandwidth.buffer_bytes);
  }
  try {
    for (const auto& name : o.models) {
      auto r = bench_model(o, m, name, dir, pool, evictor.get(), probe.get(), setup);
      results.insert(results.end(), r.begin(), r.end());
    }
  } catch (...) {
    if (remove_dir) fs::remove_all(dir);
    throw;
  }
  if (remove_dir)
    fs::remove_all(dir);
  else
    spdlog::info("model files kept in {}", dir.string());
  if (!o.quick) {
    evictor.reset();  // its buffer is not needed now; free it before another large one
    spdlog::info("measuring the read bandwidth and peak FMA again");
    remeasure_ceilings(m, pool, results, probe->best());
  }

  const auto j = to_json(o, m, results, setup, now_s() - t0);
  if (!o.json_file.empty()) {
    std::ofstream f(o.json_file);
    f << j.dump(2) << "\n";
    if (!f) fail("bench-model: cannot write {}", o.json_file);
  }
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    print_table(o, m, results);
    fmt::print("\nsetup (s): {}; peak RSS {} MiB; wall {:.0f} s\n", setup.dump(),
               j["peak_rss_bytes"].get<uint64_t>() >> 20, j["wall_s"].get<double>());
  }
  return 0;
}

}  // namespace

Command add_bench_model(CLI::App& app) {
  auto o = std::make_shared<BenchModelOpts>();
  auto* cmd = app.add_subcommand("bench-model",
                                 "Measure the forward pass on synthetic models against the machine's "
                                 "read bandwidth and peak FMA rate");
  cmd->add_flag("--quick", o->quick, "A ~10M model only, in seconds (CI)");
  cmd->add_option("--threads,-t", o->threads, "Threads (0 = one per hardware thread)")->capture_default_str();
  cmd->add_option("--models", o->models, "Models: 10m, 100m, 1b, 30b-a3b, gpt-oss-20b, 9b-hybrid, 35b-a3b-hybrid")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option(
         "--types", o->types,
         "Weight types: f16, q8_0, q4_k (q4_0, q5_1, iq4_nl, q2_k, q3_k, q5_k, q6_k, iq4_xs, mxfp4 on request)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batches", o->batches, "Decode batch sizes")->delimiter(',')->capture_default_str();
  cmd->add_option("--prompt", o->prompt, "Prefill tokens")->capture_default_str();
  cmd->add_option("--context", o->context, "KV positions before the second decode run")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed decode steps per figure (median; 0 = 5, 2 with --quick)")
      ->capture_default_str();
  cmd->add_option("--dir", o->dir, "Folder for the temporary model folder (default $TMPDIR or /tmp)");
  cmd->add_flag("--keep", o->keep, "Keep the model files");
  cmd->add_flag("--mmap", o->mmap, "Map the model files instead of reading them into memory (as serve --mmap)");
  cmd->add_option("--cache", o->cache,
                  "Folder of model files kept between runs: files already there are reused (tuning loops)");
  cmd->add_option("--simd", o->simd, "Run the kernels of this SIMD target only (e.g. AVX2 on an AVX-512 CPU)");
  cmd->add_flag("--json", o->json, "Print the figures as JSON");
  cmd->add_option("--json-file", o->json_file, "Also write the figures as JSON to this file");
  return {cmd, [o] { return run_bench_model(*o); }};
}

}  // namespace pagoda::tools
