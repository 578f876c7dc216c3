// The two ceilings `pagoda bench-model` compares its figures against, measured
// on the machine in the same run: the read bandwidth of main memory (what
// batch-1 decode is bound by) and the peak rate of f32 fused multiply-adds
// (what prefill is bound by). Both use every thread of the given pool. And
// the cache eviction that keeps decode honest against the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pagoda {
class ThreadPool;
}

namespace pagoda::tools {

struct ReadBandwidth {
  double bytes_per_s = 0;  // best of `reps` passes at each of 1, 2, 4, 8 streams per thread
  size_t buffer_bytes = 0;
};

// A buffer of `bytes` (rounded to whole vectors) in huge pages where the
// kernel grants them, as the weights are, filled (its pages faulted in) by
// the threads that read it. measure() sums it with SIMD adds, split across
// the pool's threads, once for each number of concurrent sequential streams
// per thread (1, 2, 4, 8), and gives the best bytes/s: the read speed of the
// moment, which moves by up to 2x within minutes on a shared VM.
class ReadProbe {
 public:
  ReadProbe(ThreadPool& pool, size_t bytes);
  ~ReadProbe();
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;
  double measure();
  // The best of every measure() so far (0 before the first).
  double best() const { return best_; }
  size_t bytes() const { return per_part_ * parts_ * sizeof(float); }

 private:
  ThreadPool& pool_;
  size_t parts_, per_part_, mapped_ = 0;
  float* buf_ = nullptr;
  double best_ = 0;
};

// The best of `reps` ReadProbe passes over a buffer of `bytes`.
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int reps = 5);

// A plain read of byte ranges in the given order, one parallel loop per
// range, each thread summing its share as 2 sequential streams: a batch-1
// decode step's weight reads (ranges: its matrices in forward order, split
// as decode splits them) with no arithmetic. The step's ceiling on this
// machine at this moment, which a pass over one large buffer overstates (it
// never stops and restarts its streams). Returns the bytes/s of what it read:
// each range's tail past a whole number of 64-word chunks per thread is left.
struct ByteRange {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};
double read_in_order(ThreadPool& pool, const std::vector<ByteRange>& ranges);

// A buffer size much larger than the caches: 4x the last-level cache, at
// least 1 GiB, at most 4 GiB.
size_t default_bandwidth_buffer_bytes();

// Evicts the caches by reading a buffer of twice the last-level cache (at
// least 64 MiB) on every thread of a pool: a model that partly fits in a
// large last-level cache would otherwise decode faster than its DRAM reads
// allow (a 630 MB model on a 480 MiB cache), and the bandwidth ratio would
// flatter the kernels.
class CacheEvictor {
 public:
  explicit CacheEvictor(ThreadPool& pool);
  void evict();

 private:
  ThreadPool& pool_;
  std::vector<uint64_t> buf_;
  uint64_t sink_ = 0;
};

struct PeakFma {
  double flops_per_s = 0;  // best of `reps`; 2 flops per lane per FMA
  int lanes = 0;           // f32 lanes of the SIMD target used
  std::string target;      // the Highway target picked at run time, e.g. "AVX3"
};

// Runs independent chains of vector FMAs on every thread of the pool.
PeakFma measure_peak_fma(ThreadPool& pool, int reps = 5);

struct PeakInt8 {
  double ops_per_s = 0;     // best of `reps`; 2 ops per 8-bit multiply-add; 0: not measured
  std::string instruction;  // what was timed, e.g. "vpdpbusd zmm"; empty off x86
};

// The quantized kernels' yardstick (tools/int8_peak.cpp): independent chains
// of the int8 dot product they use on this CPU, on every thread of the pool.
PeakInt8 measure_peak_int8(ThreadPool& pool, int reps = 5);

// The cost of one parallel_for that wakes every worker and does nothing,
// 5 µs after the previous one: the per-loop overhead the forward pass pays
// outside the kernels (median of `loops` calls, in seconds).
double measure_pool_round_trip(ThreadPool& pool, int loops = 2000);

}  // namespace pagoda::tools
