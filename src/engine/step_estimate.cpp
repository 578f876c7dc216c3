#include "engine/step_estimate.h"

#include <algorithm>
#include <bit>

namespace pagoda {

int StepEstimate::group(int32_t tokens) {
  return std::min(kGroups - 1, int(std::bit_width(uint32_t(std::max(1, tokens)))) - 1);
}

void StepEstimate::observe(int32_t tokens, double seconds) {
  if (tokens < 1 || !(seconds >= 0)) return;
  Group& g = groups_[size_t(group(tokens))];
  if (g.count == 0) {
    g.seconds = seconds;
    g.tokens = tokens;
  } else {
    g.seconds += kDecay * (std::min(seconds, kClamp * g.seconds) - g.seconds);
    g.tokens += kDecay * (tokens - g.tokens);
  }
  ++g.count;
}

std::optional<double> StepEstimate::predict(int32_t tokens) const {
  const int at = group(tokens);
  const auto scaled = [&](const Group& g) { return g.seconds * std::max(1.0, double(tokens) / g.tokens); };
  if (groups_[size_t(at)].count > 0) return scaled(groups_[size_t(at)]);
  for (int i = at - 1; i >= 0; --i)
    if (groups_[size_t(i)].count > 0) return scaled(groups_[size_t(i)]);
  for (int i = at + 1; i < kGroups; ++i)
    if (groups_[size_t(i)].count > 0) return groups_[size_t(i)].seconds;
  return std::nullopt;
}

}  // namespace pagoda
