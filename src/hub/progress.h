// Download progress on stderr: on a terminal, one bar redrawn in place
// (bytes, rate, ETA) at most 10 times a second; otherwise (logs, CI) a plain
// line every few seconds. Times come from the caller so tests can drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pagoda::hub {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // `total` 0: unknown. `start` is bytes already there (a resumed download).
  Progress(std::string label, uint64_t total, uint64_t start, bool terminal, std::FILE* out = stderr,
           Clock::time_point now = Clock::now());

  void update(uint64_t done, Clock::time_point now = Clock::now());
  void finish(uint64_t done, Clock::time_point now = Clock::now());  // a last line (ends the bar)

  // "1.5 MiB", "312 B": binary units.
  static std::string bytes(double n);
  // The line shown: "LABEL  45% 12.0 MiB/26.7 MiB  3.1 MiB/s  ETA 5s"
  std::string line(uint64_t done, Clock::time_point now) const;

 private:
  void emit(uint64_t done, Clock::time_point now, bool last);

  std::string label_;
  uint64_t total_, start_;
  bool terminal_;
  std::FILE* out_;
  Clock::time_point began_, last_emit_;
  bool emitted_ = false;
};

}  // namespace pagoda::hub
