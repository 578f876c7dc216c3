// GET /metrics: the engine's published statistics as Prometheus text
// (exposition format 0.0.4). Names follow vLLM's where it has one, with the
// pagoda_ prefix. Counters end in _total; histograms have cumulative
// _bucket{le=...} series, _sum and _count.
#pragma once

#include <cstdint>
#include <string>

#include "engine/config.h"

namespace pagoda::server {

// `rejected`: requests refused by backpressure (429), which never reach the
// engine; they count as received and as failures with reason="rejected", so
// received == successes + failures once nothing is in flight.
// `step_age_s`: seconds since the engine last finished a step.
std::string render_metrics(const EngineStats& s, int64_t rejected, double step_age_s);

}  // namespace pagoda::server
