#include "sched/step_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pagoda {
namespace {

constexpr double kRidge = 1e-4;  // relative to each feature's own weight

// Solves the k x k system a x = b in place (Gaussian elimination with
// partial pivoting); false if singular.
template <size_t N>
bool solve(std::array<std::array<double, N>, N>& a, std::array<double, N>& b, int k) {
  for (int c = 0; c < k; ++c) {
    int p = c;
    for (int r = c + 1; r < k; ++r)
      if (std::abs(a[size_t(r)][size_t(c)]) > std::abs(a[size_t(p)][size_t(c)])) p = r;
    if (!(std::abs(a[size_t(p)][size_t(c)]) > 1e-300)) return false;
    std::swap(a[size_t(p)], a[size_t(c)]);
    std::swap(b[size_t(p)], b[size_t(c)]);
    for (int r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[size_t(r)][size_t(c)] / a[size_t(c)][size_t(c)];
      for (int j = c; j < k; ++j) a[size_t(r)][size_t(j)] -= f * a[size_t(c)][size_t(j)];
      b[size_t(r)] -= f * b[size_t(c)];
    }
  }
  for (int r = 0; r < k; ++r) b[size_t(r)] /= a[size_t(r)][size_t(r)];
  return true;
}

}  // namespace

void LearnedStepCost::observe(const StepShape& shape, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || shape.tokens < 1) return;
  if (const auto p = predict(shape)) {
    // Slow outliers count as the bound (the absolute slack lets a model that
    // learned ~0, a virtual clock, still move). A step cannot run faster
    // than the machine allows, so a fast one is news, not noise.
    seconds = std::min(seconds, std::max(*p * kClamp, *p + 1e-3));
  }
  const std::array<double, kF> raw{1.0, shape.tokens, shape.context};
  for (int j = 1; j < kF; ++j) {
    if (raw[size_t(j)] <= scale_[size_t(j)]) continue;
    // A larger feature than ever seen: rescale the sums so features stay <= 1.
    const double r = scale_[size_t(j)] / raw[size_t(j)];
    for (int i = 0; i < kF; ++i) {
      xx_[size_t(i)][size_t(j)] *= r;
      xx_[size_t(j)][size_t(i)] *= r;
    }
    xy_[size_t(j)] *= r;
    scale_[size_t(j)] = raw[size_t(j)];
  }
  std::array<double, kF> x{};
  for (int j = 0; j < kF; ++j) x[size_t(j)] = raw[size_t(j)] / scale_[size_t(j)];
  for (int i = 0; i < kF; ++i) {
    for (int j = 0; j < kF; ++j)
      xx_[size_t(i)][size_t(j)] = kDecay * xx_[size_t(i)][size_t(j)] + x[size_t(i)] * x[size_t(j)];
    xy_[size_t(i)] = kDecay * xy_[size_t(i)] + x[size_t(i)] * seconds;
  }
  ++count_;
  refit();
}

// Non-negative ridge least squares: the best of the fits over each subset of
// the features whose coefficients all come out non-negative.
void LearnedStepCost::refit() {
  double best = std::numeric_limits<double>::infinity();
  std::array<double, kF> best_beta{};
  for (int mask = 1; mask < (1 << kF); ++mask) {
    std::array<int, kF> idx{};
    int k = 0;
    for (int j = 0; j < kF; ++j)
      if (mask & (1 << j)) idx[size_t(k++)] = j;
    std::array<std::array<double, kF>, kF> a{};
    std::array<double, kF> b{};
    for (int r = 0; r < k; ++r) {
      for (int c = 0; c < k; ++c) a[size_t(r)][size_t(c)] = xx_[size_t(idx[size_t(r)])][size_t(idx[size_t(c)])];
      a[size_t(r)][size_t(r)] *= 1 + kRidge;
      b[size_t(r)] = xy_[size_t(idx[size_t(r)])];
    }
    if (!solve(a, b, k)) continue;
    std::array<double, kF> beta{};
    bool ok = true;
    for (int r = 0; r < k; ++r) {
      ok = ok && b[size_t(r)] >= 0;
      beta[size_t(idx[size_t(r)])] = b[size_t(r)];
    }
    if (!ok) continue;
    // The ridge objective less the constant sum of y^2.
    double obj = 0;
    for (int i = 0; i < kF; ++i) {
      obj +=
          kRidge * xx_[size_t(i)][size_t(i)] * beta[size_t(i)] * beta[size_t(i)] - 2 * beta[size_t(i)] * xy_[size_t(i)];
      for (int j = 0; j < kF; ++j) obj += beta[size_t(i)] * xx_[size_t(i)][size_t(j)] * beta[size_t(j)];
    }
    if (obj < best) {
      best = obj;
      best_beta = beta;
    }
  }
  if (!std::isfinite(best)) return;  // keep the last fit
  coef_ = {best_beta[0] / scale_[0], best_beta[1] / scale_[1], best_beta[2] / scale_[2]};
}

std::optional<double> LearnedStepCost::predict(const StepShape& shape) const {
  if (count_ < kWarmup) return std::nullopt;
  return coef_.predict(shape);
}

}  // namespace pagoda
