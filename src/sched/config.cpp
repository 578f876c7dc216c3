#include "sched/config.h"

#include <charconv>
#include <cmath>
#include <string>

#include "util/error.h"

namespace pagoda {

double parse_max_step_ms(std::string_view text) {
  if (text == "auto") return SchedulerConfig::kAutoStepMs;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0)
    fail<InvalidArgument>("--max-step-ms must be a number of milliseconds >= 0 or 'auto', got '{}'", std::string(text));
  return v;
}

}  // namespace pagoda
