// The cost model of a forward pass, which the scheduler sizes time-budgeted
// steps with (scheduler.h): predicted seconds of a step =
//   fixed + per_token * batched tokens + per_context * attended positions,
// where a chunk of n tokens starting at position p attends n*p + n(n+1)/2
// positions (causal attention over the cache and itself).
//
// StepCostModel is what the scheduler reads (a pure input, so tests pass a
// fake). LearnedStepCost learns it online from the engine's measured steps,
// one instance per engine (so per model and thread count):
//  - an exponentially weighted least-squares fit (forgetting factor kDecay
//    per step: a machine that slows down or speeds up is followed within a
//    few tens of steps) over the three features, each scaled to unit size;
//  - coefficients are kept non-negative (the best fit over the subsets of
//    features, so a cost is never predicted to fall as a step grows), with
//    a small ridge so a direction the steps never varied in splits the cost
//    between fixed and per-token rather than exploding;
//  - an observation beyond kClamp times the prediction counts as that bound:
//    one stall or preempted thread does not teach the model that steps are
//    slow, while a lasting slowdown still wins within a few tens of steps.
//    Fast observations are not clamped: a step cannot run faster than the
//    machine allows, so a fast one is news (a faster machine), not noise.
// No prediction until kWarmup steps were seen (the scheduler then falls back
// to the token budget alone).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace pagoda {

// The size of a step, in the cost model's features.
struct StepShape {
  double tokens = 0;   // batched tokens
  double context = 0;  // attended positions, summed over the batch
  // Adds a chunk of n tokens computed from position `start` on.
  void add_chunk(int64_t start, int64_t n) {
    tokens += double(n);
    context += double(n) * double(start) + double(n) * double(n + 1) / 2;
  }
};

struct StepCoefficients {
  double fixed = 0, per_token = 0, per_context = 0;  // seconds
  double predict(const StepShape& s) const { return fixed + per_token * s.tokens + per_context * s.context; }
};

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  // Seconds the step should take; nullopt: not known yet.
  virtual std::optional<double> predict(const StepShape& shape) const = 0;
};

class LearnedStepCost : public StepCostModel {
 public:
  static constexpr double kDecay = 0.95;
  static constexpr double kClamp = 4;
  static constexpr int64_t kWarmup = 4;

  void observe(const StepShape& shape, double seconds);
  std::optional<double> predict(const StepShape& shape) const override;
  const StepCoefficients& coefficients() const { return coef_; }
  int64_t observations() const { return count_; }

 private:
  void refit();
  static constexpr int kF = 3;
  std::array<double, kF> scale_{1, 1, 1};        // features are divided by these (the largest seen)
  std::array<std::array<double, kF>, kF> xx_{};  // decayed sum of w * x x^T (scaled features)
  std::array<double, kF> xy_{};                  // decayed sum of w * x y
  StepCoefficients coef_;
  int64_t count_ = 0;
};

}  // namespace pagoda
