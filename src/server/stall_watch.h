// /health's view of the engine: stalled when work has been pending for longer
// than a threshold without a step finishing. The engine's heartbeat alone
// cannot say this (it is old after any idle period), so the server samples
// the published snapshot every 100 ms and remembers when it last saw
// progress: a new step, or no work at all.
#pragma once

#include <cstdint>
#include <mutex>

#include "engine/config.h"

namespace pagoda::server {

class StallWatch {
 public:
  // `pending`: requests in the engine's inbox not yet in the snapshot.
  void sample(const EngineStats& s, size_t pending, double now) {
    std::lock_guard lock(mu_);
    const bool busy = s.running + s.waiting > 0 || s.step_in_progress || pending > 0;
    if (!busy || s.steps != last_steps_ || progress_ == 0) progress_ = now;
    last_steps_ = s.steps;
  }
  // Seconds of pending work without progress (0 when idle or progressing).
  double stalled_for(double now) const {
    std::lock_guard lock(mu_);
    return progress_ == 0 ? 0 : now - progress_;
  }

 private:
  mutable std::mutex mu_;
  int64_t last_steps_ = -1;
  double progress_ = 0;
};

}  // namespace pagoda::server
