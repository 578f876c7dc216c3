// Shared pieces of the server tests: request bodies, /metrics reads, and
// waiting on a condition with a deadline (never a fixed sleep).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "server/http_client.h"
#include "server/prometheus.h"

namespace pagoda::testing {

inline PromMetrics metrics(uint16_t port) {
  const HttpResponse r = http_get(port, "/metrics");
  if (r.status != 200) throw std::runtime_error("/metrics answered " + std::to_string(r.status));
  return parse_prometheus(r.body);
}

// Polls `done` until it holds or the deadline passes; returns whether it held.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds deadline = std::chrono::seconds(10),
                       std::chrono::milliseconds every = std::chrono::milliseconds(5)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(every);
  }
}

// Nothing running or waiting, no KV block held by a request.
inline bool engine_idle(uint16_t port) {
  const PromMetrics m = metrics(port);
  return m.at("pagoda_num_requests_running") == 0 && m.at("pagoda_num_requests_waiting") == 0 &&
         m.at("pagoda_kv_blocks_used") == 0;
}

inline double terminal_total(const PromMetrics& m) {
  double t = 0;
  for (const char* r : {"stop", "length"})
    t += m.at(std::string("pagoda_request_success_total{finished_reason=\"") + r + "\"}");
  for (const char* r : {"abort", "timeout", "error", "rejected"})
    t += m.at(std::string("pagoda_request_failure_total{reason=\"") + r + "\"}");
  return t;
}

inline double failures(const PromMetrics& m, const std::string& reason) {
  return m.at("pagoda_request_failure_total{reason=\"" + reason + "\"}");
}

}  // namespace pagoda::testing
