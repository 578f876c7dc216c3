// The arithmetic of `pagoda loadgen`, as pure functions so tests can pin it:
// the Poisson arrival schedule, token ranges, prompts of about N tokens,
// percentiles and goodput. The definitions follow vLLM's benchmark_serving:
//  - TTFT: arrival of the request to its first streamed token;
//  - ITL: every gap between two streamed chunks, over all requests;
//  - TPOT: per request, (E2E - TTFT) / (output tokens - 1), 0 for one token;
//  - E2E: arrival to the last token;
//  - goodput: completed requests per second that meet every SLO given;
//  - percentiles: linear interpolation between closest ranks (numpy's default).
// One difference: vLLM's clock starts when a request gets past its
// --max-concurrency semaphore; ours starts at the request's arrival, so a
// wait in the client (all -c slots busy) counts in TTFT and E2E. That wait
// is reported on its own too (queue_ms).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace pagoda::tools {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, stddev = 0;
  int64_t count = 0;
};

Percentiles percentiles(std::vector<double> v);

// "inf" (closed loop: every client sends its next request as soon as its
// last ends) or a positive number of requests per second. InvalidArgument otherwise.
double parse_request_rate(const std::string& s);

// Arrival times in seconds from the start of a run: the first at 0, then gaps
// drawn from an exponential distribution of mean 1/rate (a Poisson process),
// the same sequence for the same seed. An infinite rate: every arrival at 0.
class PoissonArrivals {
 public:
  PoissonArrivals(double rate, uint64_t seed) : rate_(rate), rng_(seed) {}
  double next();

 private:
  double rate_, t_ = 0;
  bool first_ = true;
  std::mt19937_64 rng_;
};

// An inclusive range of token counts, drawn uniformly; empty (0:0) when not given.
struct TokenRange {
  int lo = 0, hi = 0;
  bool empty() const { return hi == 0; }
  int draw(std::mt19937_64& rng) const;
};
// "A:B" (1 <= A <= B <= 1,000,000) or "N" (= "N:N"); InvalidArgument naming `flag` otherwise.
TokenRange parse_token_range(const std::string& s, const std::string& flag);

// Prompts of about N tokens: `words` random common English words (each one
// token in Llama- and Qwen-style vocabularies, several in tiny ones), so
// prompts differ and a prefix cache does not make them free. How many words
// make N tokens is fitted on the server (see PromptFit).
std::string word_prompt(int words, std::mt19937_64& rng);

// tokens ~= base + per_word * words, fitted from two probe prompts' usage.prompt_tokens.
struct PromptFit {
  double base = 1, per_word = 1;
  // The fit through (w1, t1) and (w2, t2); the default when they make no sense.
  static PromptFit from_probes(int w1, int64_t t1, int w2, int64_t t2);
  int words_for(int tokens) const;
};

// One completed streamed request, in milliseconds.
struct RequestTiming {
  double ttft_ms = 0, e2e_ms = 0, max_itl_ms = 0;
  int64_t output_tokens = 0;
};
double tpot_ms(const RequestTiming& t);

// Service-level objectives; 0 leaves one out. A request meets them all or is not good.
struct Slo {
  double ttft_ms = 0;  // time to first token
  double itl_ms = 0;   // the request's longest gap between tokens (a stream that stalls once misses)
  double tpot_ms = 0;  // the request's mean time per output token after the first (vLLM's)
  bool any() const { return ttft_ms > 0 || itl_ms > 0 || tpot_ms > 0; }
};
bool meets(const RequestTiming& t, const Slo& slo);
int64_t count_good(const std::vector<RequestTiming>& timings, const Slo& slo);

}  // namespace pagoda::tools
