// Machine ceilings for `pagoda bench-model`: Highway kernels (compiled for
// every enabled target, picked at run time) for a memory-bound sum and an
// FMA-bound loop, driven on all threads of a ThreadPool.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tools/machine_limits.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pagoda::tools::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sums n floats (a multiple of 4 vectors) as kStreams interleaved
// sequential streams (quarters, halves... of the range), one accumulator
// each, so the adds never wait on each other and only memory limits it.
// Decode reads several weight rows at once; several streams let the
// hardware prefetchers run as they do there.
template <size_t kStreams>
float SumStreams(const float* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t per = n / kStreams / N * N;
  decltype(hn::Zero(d)) s[kStreams];
  for (auto& v : s) v = hn::Zero(d);
  for (size_t i = 0; i < per; i += N)
    for (size_t k = 0; k < kStreams; ++k) s[k] = hn::Add(s[k], hn::LoadU(d, p + k * per + i));
  auto total = s[0];
  for (size_t k = 1; k < kStreams; ++k) total = hn::Add(total, s[k]);
  return hn::GetLane(hn::SumOfLanes(d, total));
}

float SumFloats(const float* HWY_RESTRICT p, size_t n, size_t streams) {
  switch (streams) {
    case 1: return SumStreams<1>(p, n);
    case 2: return SumStreams<2>(p, n);
    case 4: return SumStreams<4>(p, n);
    default: return SumStreams<8>(p, n);
  }
}

// Two sequential streams (the halves of n 32-bit words, n a multiple of 2
// vectors) summed with integer adds: for bytes of any kind (as floats, some
// would be denormals, which cost extra on some CPUs). Decode reads 2 panel
// streams per thread.
uint32_t SumWordsTwoStreams(const uint32_t* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t N = hn::Lanes(d);
  const size_t per = n / 2 / N * N;
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);
  for (size_t i = 0; i < per; i += N) {
    s0 = hn::Add(s0, hn::LoadU(d, p + i));
    s1 = hn::Add(s1, hn::LoadU(d, p + per + i));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
}

// `iters` rounds of FMAs on 10 independent vector chains: enough chains to
// cover FMA latency x ports on current x86 (4 x 2), few enough to stay in the
// 16 registers of AVX2. Each chain converges to 1, so no overflow or denormal.
float FmaChains(uint64_t iters) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999f), c = hn::Set(d, 0.001f);
  auto a0 = hn::Set(d, 0.1f), a1 = hn::Set(d, 0.2f), a2 = hn::Set(d, 0.3f), a3 = hn::Set(d, 0.4f);
  auto a4 = hn::Set(d, 0.5f), a5 = hn::Set(d, 0.6f), a6 = hn::Set(d, 0.7f), a7 = hn::Set(d, 0.8f);
  auto a8 = hn::Set(d, 0.9f), a9 = hn::Set(d, 1.1f);
  for (uint64_t i = 0; i < iters; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                         hn::Add(hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)), hn::Add(a8, a9)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

size_t FloatLanes() { return hn::Lanes(hn::ScalableTag<float>()); }
int64_t Target() { return int64_t(HWY_TARGET); }

}  // namespace pagoda::tools::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "tools/machine_limits.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda::tools {

HWY_EXPORT(SumFloats);
HWY_EXPORT(SumWordsTwoStreams);
HWY_EXPORT(FmaChains);
HWY_EXPORT(FloatLanes);
HWY_EXPORT(Target);

namespace {

constexpr int kFmaChains = 10;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

size_t last_level_cache_bytes() {
  long bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? size_t(bytes) : 0;
}

}  // namespace

size_t default_bandwidth_buffer_bytes() {
  const size_t gib = size_t(1) << 30;
  return std::clamp(4 * last_level_cache_bytes(), gib, 4 * gib);
}

CacheEvictor::CacheEvictor(ThreadPool& pool)
    : pool_(pool), buf_(std::max(2 * last_level_cache_bytes(), size_t(64) << 20) / sizeof(uint64_t), 1) {}

void CacheEvictor::evict() {
  std::vector<uint64_t> sums(size_t(pool_.size()));
  const size_t per = buf_.size() / sums.size();
  pool_.on_every_thread([&](size_t part) {
    uint64_t s = 0;
    for (size_t i = part * per; i < (part + 1) * per; i += 8) s += buf_[i];  // one word per cache line
    sums[part] = s;
  });
  for (uint64_t s : sums) sink_ += s;
}

ReadProbe::ReadProbe(ThreadPool& pool, size_t bytes) : pool_(pool), parts_(size_t(pool.size())) {
  // Whole chunks of 4 vectors of the widest target (64 floats) per thread.
  const size_t chunk = 64;
  per_part_ = std::max<size_t>(1, bytes / sizeof(float) / parts_ / chunk) * chunk;
  mapped_ = per_part_ * parts_ * sizeof(float);
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("bench-model: cannot map {} bytes for the read bandwidth", mapped_);
  ::madvise(p, mapped_, MADV_HUGEPAGE);  // a hint: where THP is off, plain pages
  buf_ = static_cast<float*>(p);
  // Filled by the threads that read it, so pages land near them (first touch).
  pool_.on_every_thread([&](size_t part) { std::fill_n(buf_ + part * per_part_, per_part_, 1.0f); });
}

ReadProbe::~ReadProbe() { ::munmap(buf_, mapped_); }

double ReadProbe::measure() {
  std::vector<float> sums(parts_ * 16);  // one cache line apart
  double best = 0;
  for (size_t streams : {1, 2, 4, 8}) {
    const double t0 = now_s();
    pool_.on_every_thread([&](size_t part) {
      sums[part * 16] = HWY_DYNAMIC_DISPATCH(SumFloats)(buf_ + part * per_part_, per_part_, streams);
    });
    best = std::max(best, double(bytes()) / (now_s() - t0));
  }
  volatile float keep = sums[0];  // the sums are used, so the loads stay
  (void)keep;
  best_ = std::max(best_, best);
  return best;
}

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int reps) {
  ReadProbe probe(pool, bytes);
  ReadBandwidth r;
  r.buffer_bytes = probe.bytes();
  // The best of `reps` passes for each stream count: the machine's ceiling
  // however the reads are spread.
  for (int rep = 0; rep < reps; ++rep) r.bytes_per_s = std::max(r.bytes_per_s, probe.measure());
  return r;
}

double read_in_order(ThreadPool& pool, const std::vector<ByteRange>& ranges) {
  const size_t parts = size_t(pool.size()), chunk = 64;
  std::vector<uint32_t> sums(parts * 16);  // one cache line apart
  size_t bytes = 0;
  const double t0 = now_s();
  for (const ByteRange& r : ranges) {
    const size_t per_part = r.bytes / sizeof(uint32_t) / parts / chunk * chunk;
    if (per_part == 0) continue;
    const auto* p = reinterpret_cast<const uint32_t*>(r.data);
    pool.on_every_thread([&](size_t part) {
      sums[part * 16] += HWY_DYNAMIC_DISPATCH(SumWordsTwoStreams)(p + part * per_part, per_part);
    });
    bytes += per_part * parts * sizeof(uint32_t);
  }
  const double dt = now_s() - t0;
  volatile uint32_t keep = sums[0];  // the sums are used, so the loads stay
  (void)keep;
  return dt > 0 ? double(bytes) / dt : 0;
}

PeakFma measure_peak_fma(ThreadPool& pool, int reps) {
  PeakFma r;
  r.lanes = int(HWY_DYNAMIC_DISPATCH(FloatLanes)());
  r.target = hwy::TargetName(uint32_t(HWY_DYNAMIC_DISPATCH(Target)()));
  // About 0.05 s per pass at 2 FMA ports x 3 GHz.
  const uint64_t iters = uint64_t(3e8 / 2 / kFmaChains);
  std::vector<float> sink(size_t(pool.size()) * 16);
  for (int rep = 0; rep < reps; ++rep) {
    const double t0 = now_s();
    pool.on_every_thread([&](size_t part) { sink[part * 16] = HWY_DYNAMIC_DISPATCH(FmaChains)(iters); });
    const double dt = now_s() - t0;
    const double flops = 2.0 * double(r.lanes) * kFmaChains * double(iters) * pool.size();
    r.flops_per_s = std::max(r.flops_per_s, flops / dt);
  }
  volatile float keep = sink[0];  // the results are used, so the loops stay
  (void)keep;
  return r;
}

double measure_pool_round_trip(ThreadPool& pool, int loops) {
  std::vector<double> t(size_t(std::max(1, loops)));
  for (auto& x : t) {
    // A few µs of serial work between loops, as in a forward pass (norms,
    // RoPE, residual adds at batch 1), so a worker is found as it would be there.
    const double gap = now_s() + 5e-6;
    while (now_s() < gap) {
    }
    // A hand-off to every worker and back (an empty parallel_for would be
    // run by the caller alone, which takes any range no worker has claimed).
    const double t0 = now_s();
    pool.on_every_thread([](size_t) {});
    x = now_s() - t0;
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace pagoda::tools
#endif  // HWY_ONCE
