#include "sched/config.h"

#include <charconv>
#include <cmath>
#include <string>

#include "util/error.h"

namespace pagoda {

void parse_max_step_ms(std::string_view text, SchedulerConfig& config) {
  if (text == "auto") {
    config.max_step_ms = SchedulerConfig::kAutoStepMs;
    config.auto_step_multiple = SchedulerConfig{}.auto_step_multiple;
    return;
  }
  const bool multiple = text.ends_with('x');
  const std::string_view number = multiple ? text.substr(0, text.size() - 1) : text;
  double v = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(v) || v < 0 ||
      (multiple && v == 0))
    fail<InvalidArgument>(
        "--max-step-ms must be milliseconds >= 0, 'auto', or a multiple of the decode step such as '2.5x', got '{}'",
        std::string(text));
  config.max_step_ms = multiple ? SchedulerConfig::kAutoStepMs : v;
  if (multiple) config.auto_step_multiple = v;
}

}  // namespace pagoda
