// libFuzzer target for stop-string matching (StopMatcher): up to three stop
// strings and a text from the input, the text pushed in pieces of random
// sizes. What comes out must be exactly the text up to the stop string that
// completes first in the whole text (then the one that starts first), or the
// whole text if none does, however the text was split.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_shared.h"
#include "sampling/stop_matcher.h"

using pagoda::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  pagoda::fuzz::Splitter split{data[0]};
  const size_t num_stops = data[1] % 4;
  std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  std::vector<std::string> stops;
  for (size_t i = 0; i < num_stops; ++i) {  // each stop ends at a NUL byte
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) return 0;
    if (nul == 0) return 0;  // empty stops are refused up front (tested elsewhere)
    stops.emplace_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  const std::string text(rest);

  size_t best_start = std::string::npos, best_end = std::string::npos;
  for (const auto& stop : stops) {
    const size_t start = text.find(stop);
    if (start == std::string::npos) continue;
    const size_t end = start + stop.size();
    if (end < best_end || (end == best_end && start < best_start)) best_start = start, best_end = end;
  }
  const std::string want = best_start == std::string::npos ? text : text.substr(0, best_start);

  pagoda::StopMatcher m(stops);
  std::string got;
  bool stopped = false;
  for (size_t at = 0; at < text.size() && !stopped;) {
    const size_t n = std::min(text.size() - at, split.next(8));
    const auto step = m.push(std::string_view(text).substr(at, n));
    got += step.text;
    stopped = step.stopped;
    at += n;
  }
  got += m.flush();
  check(stopped == (best_start != std::string::npos), "stopped iff a stop string occurs");
  check(got == want, "the text up to the first stop string, whatever the split");
  return 0;
}
