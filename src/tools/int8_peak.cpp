// The int8 dot-product peak for `pagoda bench-model`: independent chains of
// the instruction the quantized kernels multiply with on this CPU (kernels/
// x86/panel_dot_*.cpp), so their rate has a ceiling as the FMA peak is the
// float kernels'. AVX-512 VNNI: vpdpbusd on 512 bits (64 multiply-adds);
// AVX2: vpmaddubsw, vpmaddwd, vpaddd on 256 bits (32). Not Highway: Highway
// 1.0 (Debian 12's) has no u8 x s8 dot product, and the kernels it bounds
// are x86 intrinsics too.
#include <algorithm>
#include <chrono>
#include <vector>

#include "tools/machine_limits.h"
#include "util/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAGODA_INT8_PEAK_X86 1
#endif

namespace pagoda::tools {
namespace {

constexpr int kInt8Chains = 12;  // vpdpbusd's latency (4-5) x 2 ports, and some

#ifdef PAGODA_INT8_PEAK_X86
// `iters` x kInt8Chains steps; returns a lane of the chains' sum (so they stay).
// The asm keeps the compiler from hoisting the products out of the loop.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t vnni_chains(uint64_t iters) {
  __m512i acc[kInt8Chains];
  for (int i = 0; i < kInt8Chains; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
  for (uint64_t it = 0; it < iters; ++it) {
    asm("" : "+v"(u), "+v"(s));
#pragma GCC unroll 12
    for (int i = 0; i < kInt8Chains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  }
  __m512i total = acc[0];
  for (int i = 1; i < kInt8Chains; ++i) total = _mm512_add_epi32(total, acc[i]);
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(total));
}

// Each product has inputs of its own (made opaque every round): with shared
// ones the compiler would compute one product for every chain. The 16 ymm
// registers take 6 chains; only the adds are serial, the products are not.
__attribute__((target("avx2"))) int32_t avx2_chains(uint64_t iters) {
  constexpr int kAvx2Chains = 6;
  __m256i acc[kAvx2Chains], u[kAvx2Chains];
  for (int i = 0; i < kAvx2Chains; ++i) acc[i] = _mm256_set1_epi32(i), u[i] = _mm256_set1_epi8(char(i + 1));
  const __m256i s = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
  for (uint64_t it = 0; it < iters * kInt8Chains / kAvx2Chains; ++it) {
#pragma GCC unroll 6
    for (int i = 0; i < kAvx2Chains; ++i) {
      asm("" : "+x"(u[i]));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u[i], s), ones));
    }
  }
  __m256i total = acc[0];
  for (int i = 1; i < kAvx2Chains; ++i) total = _mm256_add_epi32(total, acc[i]);
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(total));
}
#endif

}  // namespace

PeakInt8 measure_peak_int8(ThreadPool& pool, int reps) {
  PeakInt8 r;
#ifdef PAGODA_INT8_PEAK_X86
  int32_t (*chains)(uint64_t) = nullptr;
  int lanes_macs = 0;  // multiply-adds of one chain step
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    chains = vnni_chains, lanes_macs = 64, r.instruction = "vpdpbusd zmm";
  } else if (__builtin_cpu_supports("avx2")) {
    chains = avx2_chains, lanes_macs = 32, r.instruction = "vpmaddubsw+vpmaddwd ymm";
  }
  if (!chains) return r;
  // About 0.05 s a pass at 2 ports x 3 GHz.
  const uint64_t iters = uint64_t(3e8 / 2 / kInt8Chains);
  std::vector<int32_t> sink(size_t(pool.size()) * 16);
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.on_every_thread([&](size_t part) { sink[part * 16] = chains(iters); });
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double ops = 2.0 * lanes_macs * kInt8Chains * double(iters) * pool.size();
    r.ops_per_s = std::max(r.ops_per_s, ops / dt);
  }
  volatile int32_t keep = sink[0];  // the sums are used, so the loops stay
  (void)keep;
#else
  (void)pool, (void)reps;
#endif
  return r;
}

}  // namespace pagoda::tools
