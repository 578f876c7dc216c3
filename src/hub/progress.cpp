#include "hub/progress.h"

#include <fmt/format.h>

#include <algorithm>

namespace pagoda::hub {
namespace {

std::string duration(double s) {
  if (s < 60) return fmt::format("{}s", int(s + 0.5));
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, int(s) % 3600 / 60);
}

}  // namespace

Progress::Progress(std::string label, uint64_t total, uint64_t start, bool terminal, std::FILE* out,
                   Clock::time_point now)
    : label_(std::move(label)),
      total_(total),
      start_(start),
      terminal_(terminal),
      out_(out),
      began_(now),
      last_emit_(now) {}

std::string Progress::bytes(double n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (n >= 1024 && u < 4) n /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", uint64_t(n)) : fmt::format("{:.1f} {}", n, kUnits[u]);
}

std::string Progress::line(uint64_t done, Clock::time_point now) const {
  const double secs = std::chrono::duration<double>(now - began_).count();
  const double rate = secs > 0 && done > start_ ? double(done - start_) / secs : 0;
  std::string s = label_;
  if (total_ > 0) {
    s += fmt::format(" {:3d}% {}/{}", int(100.0 * double(std::min(done, total_)) / double(total_)), bytes(double(done)),
                     bytes(double(total_)));
  } else {
    s += fmt::format(" {}", bytes(double(done)));
  }
  s += fmt::format("  {}/s", bytes(rate));
  if (total_ > 0 && rate > 0 && done < total_) s += fmt::format("  ETA {}", duration(double(total_ - done) / rate));
  return s;
}

void Progress::update(uint64_t done, Clock::time_point now) {
  // Redraw a bar 10 times a second; print a log line every 5 s.
  const auto every = terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_emit_ < every) return;
  emit(done, now, false);
}

void Progress::finish(uint64_t done, Clock::time_point now) { emit(done, now, true); }

void Progress::emit(uint64_t done, Clock::time_point now, bool last) {
  last_emit_ = now;
  emitted_ = true;
  std::string s = line(done, now);
  if (terminal_) {
    // A 20-cell bar in front when the size is known; \r and clear-to-end redraw in place.
    if (total_ > 0) {
      const int cells = int(20.0 * double(std::min(done, total_)) / double(total_));
      s = fmt::format("[{}{}] {}", std::string(size_t(cells), '#'), std::string(size_t(20 - cells), '.'), s);
    }
    std::fprintf(out_, "\r%s\x1b[K%s", s.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", s.c_str());
  }
  std::fflush(out_);
}

}  // namespace pagoda::hub
