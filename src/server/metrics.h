// GET /metrics: the engine's published statistics as Prometheus text
// (exposition format 0.0.4). Names follow vLLM's where it has one, with the
// pagoda_ prefix. Counters end in _total; histograms have cumulative
// _bucket{le=...} series, _sum and _count.
#pragma once

#include <cstdint>
#include <string>

#include "engine/stats.h"

namespace pagoda::server {

// Requests refused by backpressure (429) never reach the engine; they count
// as received and as failures with reason="rejected", so received ==
// successes + failures once nothing is in flight.
// What the server adds: the 429s, the inbox, and the stall watch's view.
struct ServerFigures {
  int64_t rejected = 0;       // refused by backpressure (429), never in the engine
  int64_t inbox = 0;          // submitted, not yet taken by the engine: counted as waiting
  double step_age_s = 0;      // since the engine last finished a step
  double step_running_s = 0;  // how long the step in progress has run (0: none)
  bool stalled = false;
  int64_t stalls = 0;
};

std::string render_metrics(const EngineStats& s, const ServerFigures& f);

}  // namespace pagoda::server
