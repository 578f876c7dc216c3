// `pagoda loadgen`: a load generator for any OpenAI-compatible server.
// N concurrent clients (Asio coroutines on one thread) send completion or
// chat requests, streaming or not, until a request count or a time bound is
// reached; some clients can be rude on purpose (hang up while waiting or in
// the middle of a stream, send malformed or invalid requests). Every request
// ends in exactly one outcome category; the report has throughput and
// TTFT / inter-token / end-to-end latency percentiles. It only ever connects
// to the host and port it is given.
//
// Closed loop (request_rate inf, the default): each client sends its next
// request when its last one ends. Open loop (a finite rate): requests arrive
// as a seeded Poisson process, whatever the server's pace; `clients` then caps
// the requests in flight, and an arrival that finds every client busy waits
// in the client for the next free one (that wait counts in its TTFT and E2E,
// and is reported as queue_ms). Metric definitions: loadgen_stats.h.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/loadgen_stats.h"

namespace pagoda::tools {

struct LoadgenConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string api_key;
  std::string model;  // "": the first of GET /v1/models
  bool chat = false;  // /v1/chat/completions instead of /v1/completions
  bool stream = true;
  int clients = 8;         // concurrent clients
  int64_t requests = 100;  // total, over all clients
  double duration_s = 60;  // no new request after this
  int max_tokens = 32;
  bool ignore_eos = false;
  double temperature = 0.8;
  std::vector<std::string> prompts;   // empty: built-in story openings
  double hangup_fraction = 0;         // requests whose client hangs up on purpose...
  double hangup_waiting_share = 0.5;  // ... of which this share before any response byte, the rest mid-stream
  double bad_fraction = 0;            // requests with invalid input (expect 4xx)
  double request_timeout_s = 120;     // a request not done by then counts as client_timeout
  uint64_t seed = 1;
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; inf: closed loop
  TokenRange prompt_tokens;  // empty: `prompts`; else word prompts of about that many tokens
  TokenRange output_tokens;  // empty: max_tokens
  Slo slo;
  nlohmann::json body_extra = nlohmann::json::object();  // merged into every valid request (e.g. response_format)
};

struct LoadgenReport {
  int64_t requests = 0;                                      // started
  int64_t ok = 0;                                            // 200 and a complete response ([DONE] when streaming)
  int64_t hung_up_waiting = 0;                               // we hung up before the response started
  int64_t hung_up_streaming = 0;                             // we hung up mid-stream
  int64_t bad_sent = 0, bad_rejected = 0, bad_accepted = 0;  // invalid requests: 4xx (expected) / 2xx
  int64_t rejected_429 = 0;                                  // backpressure
  int64_t http_4xx = 0, http_5xx = 0;                        // unexpected statuses for valid requests
  int64_t stream_errors = 0;                                 // an error event inside a 200 stream
  int64_t transport_errors = 0;                              // connection failed or closed by the server
  int64_t resent = 0;  // requests sent again: a kept-alive connection closed unanswered (not an outcome)
  int64_t client_timeouts = 0;
  int64_t completion_tokens = 0;
  int64_t prompt_tokens = 0;           // usage.prompt_tokens of the completed requests
  int64_t good = 0;                    // completed requests meeting every SLO (all of them without SLOs)
  int64_t max_concurrent_streams = 0;  // most streams open (headers received) at once
  double duration_s = 0;
  double request_rate = 0;  // as configured (inf: closed loop)
  int clients = 0;
  Slo slo;
  // Of completed streamed requests (e2e and prompt tokens: of all completed).
  Percentiles ttft_ms, itl_ms, tpot_ms, e2e_ms, queue_ms, prompt_tokens_each;
  std::vector<std::string> samples;  // a few error messages, for diagnosis
  bool server_gone = false;          // stopped early: connections were refused, none accepted since

  // Every request ended in exactly one category.
  int64_t ended() const {
    return ok + hung_up_waiting + hung_up_streaming + bad_rejected + bad_accepted + rejected_429 + http_4xx + http_5xx +
           stream_errors + transport_errors + client_timeouts;
  }
  nlohmann::json to_json() const;
  std::string summary() const;
};

LoadgenReport run_loadgen(const LoadgenConfig& config);

}  // namespace pagoda::tools
