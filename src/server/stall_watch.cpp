#include "server/stall_watch.h"

#include <fmt/format.h>

#include <algorithm>

namespace pagoda::server {

double StallRule::limit(double predicted_s) const {
  return predicted_s > 0 ? std::max(min_s, factor * predicted_s) : std::max(min_s, unknown_s);
}

void StallWatch::sample(const EngineStats& s, size_t pending, double now) {
  std::lock_guard lock(mu_);
  const bool busy = s.running + s.waiting > 0 || s.step_in_progress || pending > 0;
  if (!busy || s.steps != last_steps_ || progress_ == 0) progress_ = now;
  last_steps_ = s.steps;
  const bool stalled = judge(s, now).stalled;
  if (stalled && !stalled_) ++stalls_;
  stalled_ = stalled;
}

StallState StallWatch::check(const EngineStats& s, double now) const {
  std::lock_guard lock(mu_);
  return judge(s, now);
}

// A step in progress has its own limit; between steps, pending work must see one start.
StallState StallWatch::judge(const EngineStats& s, double now) const {
  StallState st;
  if (s.step_in_progress) {
    st.seconds = now - s.step_started_at;
    st.limit_seconds = rule_.limit(s.step_predicted_s);
    if (st.seconds > st.limit_seconds) {
      st.stalled = true;
      st.reason = s.step_predicted_s > 0
                      ? fmt::format("a step has run {:.1f} s; steps like it take {:.3f} s (limit {:.1f} s)", st.seconds,
                                    s.step_predicted_s, st.limit_seconds)
                      : fmt::format("a step has run {:.1f} s (limit {:.1f} s)", st.seconds, st.limit_seconds);
    }
    return st;
  }
  // Since the later of: the last step's end (the engine's own clock, so a
  // sample that has not yet seen that step cannot make it look old) and the
  // last sample that saw no work.
  const double since = std::max(progress_, s.last_step_end);
  st.seconds = progress_ == 0 ? 0 : now - since;
  st.limit_seconds = rule_.min_s;
  if (st.seconds > st.limit_seconds) {
    st.stalled = true;
    st.reason = fmt::format("work has been pending {:.1f} s without a step", st.seconds);
  }
  return st;
}

int64_t StallWatch::stalls() const {
  std::lock_guard lock(mu_);
  return stalls_;
}

}  // namespace pagoda::server
