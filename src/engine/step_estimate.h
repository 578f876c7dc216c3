// How long the engine expects a step to take, learned from its own steps, so
// that a watcher can tell a stuck step from a legitimately long one (a
// 2048-token prefill on a CPU takes seconds; a decode step milliseconds).
//
// Steps are grouped by their token count in powers of two; each group keeps
// a decayed mean of its step times and token counts, an observation above 4x
// the mean counting as 4x (one stall does not teach it that stalls are
// normal). A step of n tokens is predicted from its own group, scaled up by
// n / the group's mean tokens when larger; from the nearest smaller group
// scaled up by the token ratio (per-token cost falls as batches grow, so this
// overestimates, which is the safe side); else from the nearest larger
// group's time. No group seen yet: no prediction.
// Not the scheduler's LearnedStepCost: that one plans, so it wants an
// unbiased fit; a watcher wants an estimate that errs long, never short.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace pagoda {

class StepEstimate {
 public:
  void observe(int32_t tokens, double seconds);
  std::optional<double> predict(int32_t tokens) const;

 private:
  static constexpr int kGroups = 24;  // 1 .. 2^23 tokens
  static constexpr double kDecay = 0.2;
  static constexpr double kClamp = 4;
  static int group(int32_t tokens);
  struct Group {
    double seconds = 0, tokens = 0;
    int64_t count = 0;
  };
  std::array<Group, kGroups> groups_{};
};

}  // namespace pagoda
