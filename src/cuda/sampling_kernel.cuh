// sample_rows' kernel (launcher: sampling.cu), apart so a test can also run it
// on the CPU (tests/cuda/host_emulation.h). One block per logits row: a
// RowSampling record in, a SampledRow out, equal to sample_row_reference()
// (sampling/row_sample.h).
//
// Every filter is a threshold on the sampler's strict order (higher logit
// first, lower id on ties) written as one 64-bit key per token: the logit's
// order-preserving bits, then the id's complement. A threshold is found by
// bisection, each probe one block-wide sum over the row: 32 probes over the
// logit's bits, then about log2(vocab) over the ids of tokens tied at it.
// Plain and slow on purpose (README.md lists the speedups).
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/portable.cuh"
#include "sampling/row_sample.h"

namespace pagoda::cuda::detail {
namespace {  // file-local: a test's CPU build of a kernel must not clash with the library's

constexpr int kSampleThreads = 256;

// -inf's ordered bits (below): less than every finite logit's.
constexpr uint32_t kMaskedBits = 0x007FFFFFu;

// Neither NaN nor infinite, read from the bits so both compilers agree under any math flags.
PAGODA_HD bool finite_float(float x) { return (float_bits(x) & 0x7F800000u) != 0x7F800000u; }

// The float order as unsigned order (-0 taken as +0, as the CPU's comparisons do).
PAGODA_HD uint32_t ordered_bits(float x) {
  const uint32_t b = float_bits(x == 0.0f ? 0.0f : x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

PAGODA_HD float ordered_float(uint32_t o) { return bits_float((o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o); }

// A bigger key is more likely: a higher logit, then a lower id. Distinct per token.
PAGODA_HD uint64_t order_key(float logit, int32_t id) {
  return (uint64_t(ordered_bits(logit)) << 32) | uint64_t(~uint32_t(id));
}
PAGODA_HD int32_t key_id(uint64_t key) { return int32_t(~uint32_t(key)); }
PAGODA_HD float key_logit(uint64_t key) { return ordered_float(uint32_t(key >> 32)); }
PAGODA_HD bool masked(float logit) { return ordered_bits(logit) == kMaskedBits; }

// sampler.h's penalties (row_sample.cpp's penalized_logit), each operation
// rounded once: no FMA, so the device's value is the CPU's to the bit.
PAGODA_HD float penalized_logit(float logit, const PenaltyEntry& e, const RowSampling& r) {
  if (r.repetition_penalty != 1.0f)
    logit = logit > 0.0f ? logit / r.repetition_penalty : mul_rn(logit, r.repetition_penalty);
  if (e.output_count > 0)
    logit = sub_rn(logit, add_rn(mul_rn(r.frequency_penalty, float(e.output_count)), r.presence_penalty));
  return FLT_MAX < logit ? FLT_MAX : logit;  // std::min(logit, FLT_MAX)
}

// A block-wide sum (kMax false) or max of one value a thread, returned to every
// thread bit-identical (each adds the 32 partials in one order), so that the
// bisections below branch alike in all threads. Shared memory rather than
// warp shuffles: two barriers a call, where each shuffle would be one more in
// the CPU emulation. blockDim.x must be kSampleThreads; all threads must call.
template <bool kMax, class T>
__device__ __forceinline__ T block_reduce(T v) {
  __shared__ T vals[kSampleThreads];
  __shared__ T partial[32];
  const int t = int(threadIdx.x);
  vals[t] = v;
  __syncthreads();
  if (t < 32) {
    T s = vals[t];
    for (int j = t + 32; j < kSampleThreads; j += 32) {
      if constexpr (kMax)
        s = vals[j] > s ? vals[j] : s;
      else
        s += vals[j];
    }
    partial[t] = s;
  }
  __syncthreads();  // vals may be rewritten by the next call from here on; partial only after its first barrier
  T r = partial[0];
  for (int j = 1; j < 32; ++j) {
    if constexpr (kMax)
      r = partial[j] > r ? partial[j] : r;
    else
      r += partial[j];
  }
  return r;
}

// The sum of f(i) (a double) over tokens i < n, in every thread.
template <class F>
__device__ __forceinline__ double row_sum(int32_t n, F f) {
  double s = 0;
  for (int32_t i = int32_t(threadIdx.x); i < n; i += kSampleThreads) s += f(i);
  return block_reduce<false>(s);
}

// The max of f(i) (a uint64_t) over tokens i < n, in every thread (0 when n is 0).
template <class F>
__device__ __forceinline__ uint64_t row_max(int32_t n, F f) {
  uint64_t m = 0;
  for (int32_t i = int32_t(threadIdx.x); i < n; i += kSampleThreads) {
    const uint64_t v = f(i);
    m = v > m ? v : m;
  }
  return block_reduce<true>(m);
}

// The largest t in [lo, hi] with pred(t), given pred(lo) and pred true, then
// false, as t grows. pred reduces over the block: every thread calls this alike.
template <class Pred>
__device__ __forceinline__ uint32_t largest_true(uint32_t lo, uint32_t hi, Pred pred) {
  while (lo < hi) {
    const uint32_t mid = uint32_t((uint64_t(lo) + hi + 1) / 2);
    if (pred(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// The key of the token at which the running sum of f over the order (most
// likely first) first reaches target: the largest theta <= top (the most
// likely token's key) with sum(f(i) : key(i) >= theta) >= target. The sum over
// the whole row must reach target. First the logit's bits, then the id among
// the tokens of that logit.
template <class Key, class F>
__device__ __forceinline__ uint64_t threshold_key(int32_t vocab, uint64_t top, double target, Key key, F f) {
  auto reaches = [&](uint64_t theta) {
    return row_sum(vocab, [&](int32_t i) { return key(i) >= theta ? f(i) : 0.0; }) >= target;
  };
  const uint32_t top_bits = uint32_t(top >> 32);
  const uint32_t bits = largest_true(0, top_bits, [&](uint32_t b) { return reaches(uint64_t(b) << 32); });
  // Ids run from 0 (the lowest complement, ~0) to vocab - 1.
  const uint32_t low = largest_true(~uint32_t(vocab - 1), bits == top_bits ? uint32_t(top) : 0xFFFFFFFFu,
                                    [&](uint32_t x) { return reaches((uint64_t(bits) << 32) | x); });
  return (uint64_t(bits) << 32) | low;
}

// The drawn token of a row with temperature > 0 (row_sample.cpp's kept_weights
// and draw); pen: [vocab] the penalized logits, top: the most likely one's key.
__device__ __forceinline__ int32_t draw_token(const float* pen, int32_t vocab, const RowSampling& row, uint64_t top) {
  const float best = key_logit(top), temp = row.temperature;
  auto key = [&](int32_t i) { return order_key(pen[i], i); };
  auto weight = [&](int32_t i) { return pen[i] == best ? 1.0 : double(expf((pen[i] - best) / temp)); };
  auto finite_one = [&](int32_t i) { return masked(pen[i]) ? 0.0 : 1.0; };

  // Top-k: the k most likely of the tokens not -inf, the keys >= k_min.
  uint64_t k_min = 0;
  if (row.top_k > 0) {
    const double n_finite = row_sum(vocab, finite_one);
    if (double(row.top_k) < n_finite) k_min = threshold_key(vocab, top, double(row.top_k), key, finite_one);
  }
  auto in_k = [&](int32_t i) { return !masked(pen[i]) && key(i) >= k_min; };
  auto k_weight = [&](int32_t i) { return in_k(i) ? weight(i) : 0.0; };
  // Min-p's dropped tokens count toward neither the top-p cut nor the draw.
  auto p_weight = [&](int32_t i) {
    const double w = k_weight(i);
    return in_k(i) && w >= double(row.min_p) ? w : 0.0;
  };

  // Top-p: up to the token whose running sum first reaches top_p of the top-k total.
  uint64_t p_min = 0;
  if (row.top_p < 1.0f) {
    const double target = double(row.top_p) * row_sum(vocab, k_weight);
    if (row_sum(vocab, p_weight) >= target) p_min = threshold_key(vocab, top, target, key, p_weight);
  }
  auto kept = [&](int32_t i) { return key(i) >= p_min ? p_weight(i) : 0.0; };

  // The first token in id order whose running weight exceeds uniform x total:
  // the largest t with sum(ids < t) <= u (the sums grow with t, rounding included).
  const double total = row_sum(vocab, kept);
  const double u = row.uniform * total;
  if (u < total)
    return int32_t(
        largest_true(0, uint32_t(vocab - 1), [&](uint32_t t) { return t == 0 || row_sum(int32_t(t), kept) <= u; }));
  // Rounding left u at the top: the last kept token (-1 if none).
  return int32_t(row_max(vocab, [&](int32_t i) { return kept(i) > 0 ? uint64_t(i) + 1 : uint64_t(0); })) - 1;
}

// One block per row.
//   logits     [n_rows][vocab] (read only)
//   scratch    [n_rows][2][vocab]: the adjusted row, then the penalized one
//   rows, out  [n_rows]
__global__ void __launch_bounds__(kSampleThreads)
    sample_rows_kernel(const float* logits, float* scratch, int32_t vocab, const RowSampling* rows,
                       const LogitAdjust* adjusts, const PenaltyEntry* penalties, SampledRow* out) {
  const int64_t r = blockIdx.x;
  const RowSampling row = rows[r];
  const float* x = logits + r * vocab;
  float* adj = scratch + r * 2 * vocab;
  float* pen = adj + vocab;
  SampledRow* o = out + r;
  const bool writer = threadIdx.x == 0;
  const int32_t tid = int32_t(threadIdx.x);
  if (writer) {  // what every status leaves; the fields are filled in as they are known
    o->status = SampledRow::kSampled;
    o->token = -1;
    o->logprob = 0;
    o->n_top = 0;
  }

  double non_finite = 0;
  for (int32_t i = tid; i < vocab; i += kSampleThreads) {
    const float v = x[i];
    if (!finite_float(v)) non_finite = 1;
    adj[i] = v;
  }
  if (block_reduce<false>(non_finite) > 0) {  // the block's barrier also publishes adj
    if (writer) o->status = SampledRow::kNonFinite;
    return;
  }
  // One entry a token: no two threads write one logit.
  for (int32_t j = tid; j < row.adjust_count; j += kSampleThreads) {
    const LogitAdjust e = adjusts[row.adjust_begin + j];
    if (e.token >= 0 && e.token < vocab) adj[e.token] += e.add;
  }
  __syncthreads();
  for (int32_t i = tid; i < vocab; i += kSampleThreads) pen[i] = adj[i];
  __syncthreads();
  for (int32_t j = tid; j < row.penalty_count; j += kSampleThreads) {
    const PenaltyEntry e = penalties[row.penalty_begin + j];
    if (e.token >= 0 && e.token < vocab) pen[e.token] = penalized_logit(adj[e.token], e, row);
  }
  __syncthreads();

  const uint64_t top = row_max(vocab, [&](int32_t i) { return order_key(pen[i], i); });
  if (uint32_t(top >> 32) == kMaskedBits) {
    if (writer) o->status = SampledRow::kAllMasked;
    return;
  }
  // Greedy: the most likely token, the lowest id on ties.
  const int32_t token = row.temperature == 0.0f ? key_id(top) : draw_token(pen, vocab, row, top);
  if (writer) o->token = token;
  if (row.n_logprobs < 0 || token < 0) return;

  // Logprobs under the log-softmax of the adjusted row, as logprobs.h: its max,
  // then float exps summed in double.
  const float a_max = key_logit(row_max(vocab, [&](int32_t i) { return order_key(adj[i], i); }));
  const double lse = double(a_max) + log(row_sum(vocab, [&](int32_t i) { return double(expf(adj[i] - a_max)); }));
  if (writer) o->logprob = float(double(adj[token]) - lse);
  // Top n: each round the most likely token after the previous round's, -inf never.
  const int32_t n = row.n_logprobs < SamplingParams::kMaxLogprobs ? row.n_logprobs : SamplingParams::kMaxLogprobs;
  uint64_t prev = ~uint64_t(0);
  for (int32_t k = 0; k < n; ++k) {
    const uint64_t next = row_max(vocab, [&](int32_t i) {
      const uint64_t key = order_key(adj[i], i);
      return !masked(adj[i]) && key < prev ? key : uint64_t(0);  // a finite logit's key is never 0
    });
    if (next == 0) break;
    const float lp = float(double(key_logit(next)) - lse);
    if (!finite_float(lp)) break;  // underflowed to -inf: the CPU drops it, and all after it
    if (writer) {
      o->top[k] = SampledLogprob{key_id(next), lp};
      o->n_top = k + 1;
    }
    prev = next;
  }
}

}  // namespace
}  // namespace pagoda::cuda::detail
