// /health's judgment of the engine: is it stalled? Two ways to stall:
//
//  - a step runs longer than its limit, max(--stall-min-ms, --stall-factor x
//    the step's predicted time) (StepEstimate, learned from the engine's own
//    steps; --stall-timeout for a step of a size never seen), so a
//    legitimately long prefill is not a stall and a hung decode step is one
//    within seconds;
//  - work is pending (requests running, waiting or in the inbox) and no step
//    has started for --stall-min-ms.
//
// check() judges a fresh snapshot, so /health turns 503 as soon as a limit
// passes and 200 again when the step ends. The server also samples the
// snapshot every 100 ms: that tells how long work has been pending (the
// heartbeat alone is old after any idle time) and counts stall episodes for
// /metrics.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "engine/stats.h"

namespace pagoda::server {

struct StallRule {
  double min_s = 2;       // --stall-min-ms / 1000
  double factor = 4;      // --stall-factor
  double unknown_s = 30;  // --stall-timeout: limit for a step with no prediction
  double limit(double predicted_s) const;
};

struct StallState {
  bool stalled = false;
  std::string reason;  // for /health's body
  double seconds = 0;  // how long the step has run, or work has waited
  double limit_seconds = 0;
};

class StallWatch {
 public:
  explicit StallWatch(StallRule rule = {}) : rule_(rule) {}

  // `pending`: requests in the engine's inbox not yet in the snapshot.
  void sample(const EngineStats& s, size_t pending, double now);
  StallState check(const EngineStats& s, double now) const;
  int64_t stalls() const;  // episodes seen by sample()
  const StallRule& rule() const { return rule_; }

 private:
  StallState judge(const EngineStats& s, double now) const;  // mu_ held
  const StallRule rule_;
  mutable std::mutex mu_;
  int64_t last_steps_ = -1;
  double progress_ = 0;  // last time a step started or nothing was pending
  bool stalled_ = false;
  int64_t stalls_ = 0;
};

}  // namespace pagoda::server
