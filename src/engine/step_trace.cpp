#include "engine/step_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace pagoda {

const char* step_phase_name(StepPhase p) {
  static constexpr std::array<const char*, kNumStepPhases> kNames = {
      "inbox", "reap", "schedule", "forward", "sample", "detok", "handoff", "finish", "publish", "wait"};
  return kNames[size_t(p)];
}

double StepPhaseTimes::total() const {
  double t = 0;
  for (double s : seconds) t += s;
  return t;
}

StepPhaseTimes StepPhaseTimes::since(const StepPhaseTimes& earlier) const {
  StepPhaseTimes d;
  for (size_t i = 0; i < kNumStepPhases; ++i) d.seconds[i] = seconds[i] - earlier.seconds[i];
  d.steps = steps - earlier.steps;
  d.tokens = tokens - earlier.tokens;
  return d;
}

std::string StepPhaseTimes::table() const {
  const double steps_d = double(std::max<int64_t>(1, steps));
  // Shares of the busy time: waiting for work is no step's cost.
  const double busy = total() - (*this)[StepPhase::wait];
  std::string out =
      fmt::format("step trace: {} steps, {} tokens\n{:<9} {:>10} {:>7}\n", steps, tokens, "phase", "us/step", "share");
  for (size_t i = 0; i < kNumStepPhases; ++i) {
    const auto p = StepPhase(i);
    const double share = p == StepPhase::wait || busy <= 0 ? 0 : seconds[i] / busy;
    out += fmt::format("{:<9} {:>10.1f} {:>6.1f}%\n", step_phase_name(p), seconds[i] / steps_d * 1e6, 100 * share);
  }
  const double forward = (*this)[StepPhase::forward];
  out += fmt::format("busy {:.1f} us/step; tokens/s {:.2f} busy, {:.2f} forward only ({:.3f})\n", busy / steps_d * 1e6,
                     busy > 0 ? double(tokens) / busy : 0.0, forward > 0 ? double(tokens) / forward : 0.0,
                     busy > 0 ? forward / busy : 0.0);
  return out;
}

int64_t step_trace_interval() {
  const char* v = std::getenv("PAGODA_STEP_TRACE");
  if (!v || !*v) return 0;
  const long long n = std::atoll(v);
  return n > 0 ? n : 1000;  // set but not a count: every 1000 steps
}

}  // namespace pagoda
