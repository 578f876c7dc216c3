// KV block manager benchmark: time per operation at pools of 10^3 .. 10^6
// blocks. Every operation costs O(blocks it touches), never O(pool), so the
// times must stay flat as the pool grows (10^6 within 2x of 10^3).
//
// Each pool starts full of cached blocks (every block hashed, free, in the
// map), as a server's pool is after a while, so lookups and evictions run
// against a map of N entries.
#include <benchmark/benchmark.h>

#include <vector>

#include "kv/block_manager.h"

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kSeqTokens = 512;  // a 32-block sequence
constexpr SeqId kSeq = 1;

// Unique token ids, so every prompt hashes to new blocks.
struct TokenSource {
  TokenId next = 0;
  std::vector<TokenId> prompt(int32_t n) {
    std::vector<TokenId> t(static_cast<size_t>(n));
    for (auto& v : t) v = next++;
    return t;
  }
};

// A pool of `num_blocks` whose every block holds a cached, free block.
BlockManager make_pool(int64_t num_blocks, TokenSource& tokens) {
  BlockManagerConfig c;
  c.num_blocks = int32_t(num_blocks);
  c.block_size = kBlockSize;
  BlockManager m(c);
  for (int32_t filled = 0; filled < c.num_blocks; filled += kSeqTokens / kBlockSize) {
    const auto p = tokens.prompt(kSeqTokens);
    if (!m.allocate(kSeq, kSeqTokens)) break;
    m.commit(kSeq, p, kSeqTokens);
    m.free(kSeq);
  }
  return m;
}

void set_counters(benchmark::State& state, const BlockManager& m) {
  state.counters["blocks"] = double(m.num_blocks());
  state.counters["hashed"] = double(m.stats().hashed_blocks);
}

// allocate(): admit a 512-token sequence (32 fresh blocks), then free it.
void BM_AllocateFree(benchmark::State& state) {
  TokenSource tokens;
  BlockManager m = make_pool(state.range(0), tokens);
  for (auto _ : state) {
    AllocResult r = m.allocate(kSeq, kSeqTokens);
    benchmark::DoNotOptimize(r);
    m.free(kSeq);
  }
  set_counters(state, m);
}

// Decode: one allocate() per appended token; a new block every 16 tokens.
void BM_Append(benchmark::State& state) {
  TokenSource tokens;
  BlockManager m = make_pool(state.range(0), tokens);
  int32_t n = 1;
  (void)m.allocate(kSeq, n);
  for (auto _ : state) {
    if (++n > 4096) {  // a finished sequence gives way to a new one
      state.PauseTiming();
      m.free(kSeq);
      n = 1;
      (void)m.allocate(kSeq, n);
      state.ResumeTiming();
      continue;
    }
    AllocResult r = m.allocate(kSeq, n);
    benchmark::DoNotOptimize(r);
  }
  m.free(kSeq);
  set_counters(state, m);
}

// lookup_prefix(): a 513-token prompt whose first 32 blocks are cached.
void BM_Lookup(benchmark::State& state) {
  TokenSource tokens;
  BlockManager m = make_pool(state.range(0), tokens);
  auto prompt = tokens.prompt(kSeqTokens + 1);
  (void)m.allocate(2, kSeqTokens + 1);
  m.commit(2, prompt, kSeqTokens + 1);
  m.free(2);
  for (auto _ : state) {
    CachedPrefix p = m.lookup_prefix(prompt);
    benchmark::DoNotOptimize(p);
    if (p.blocks.size() != size_t(kSeqTokens / kBlockSize)) state.SkipWithError("expected a 32-block hit");
  }
  set_counters(state, m);
}

// Admission on a prefix hit: lookup, allocate (its 32 cached blocks come out
// of the middle of the free queue), free (they go back to its tail).
void BM_AdmitCachedPrefix(benchmark::State& state) {
  TokenSource tokens;
  BlockManager m = make_pool(state.range(0), tokens);
  auto prompt = tokens.prompt(kSeqTokens + 1);
  (void)m.allocate(2, kSeqTokens + 1);
  m.commit(2, prompt, kSeqTokens + 1);
  m.free(2);
  for (auto _ : state) {
    CachedPrefix p = m.lookup_prefix(prompt);
    AllocResult r = m.allocate(kSeq, kSeqTokens + 1, p);
    benchmark::DoNotOptimize(r);
    m.free(kSeq);
  }
  set_counters(state, m);
}

// Churn: admit a new 512-token prompt, commit it (32 blocks hashed into the
// cache), free it. The pool is full of cached blocks, so each of the 32 fresh
// blocks evicts the least recently freed one: this walks the whole pool.
void BM_CommitEvict(benchmark::State& state) {
  TokenSource tokens;
  BlockManager m = make_pool(state.range(0), tokens);
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 64; ++i) prompts.push_back(tokens.prompt(kSeqTokens));
  size_t i = 0;
  for (auto _ : state) {
    // Rewrite the first token so every prompt is new (cheap, outside the manager).
    auto& p = prompts[i++ % prompts.size()];
    p[0] = tokens.next++;
    (void)m.allocate(kSeq, kSeqTokens);
    m.commit(kSeq, p, kSeqTokens);
    m.free(kSeq);
  }
  set_counters(state, m);
  state.counters["evictions"] = double(m.stats().evictions);
}

#define POOL_SIZES RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kNanosecond)
BENCHMARK(BM_AllocateFree)->POOL_SIZES;
BENCHMARK(BM_Append)->POOL_SIZES;
BENCHMARK(BM_Lookup)->POOL_SIZES;
BENCHMARK(BM_AdmitCachedPrefix)->POOL_SIZES;
BENCHMARK(BM_CommitEvict)->POOL_SIZES;

}  // namespace
}  // namespace pagoda

BENCHMARK_MAIN();
