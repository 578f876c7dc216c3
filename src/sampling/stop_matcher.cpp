// StopMatcher: search the held tail plus the new delta, release all but the
// longest suffix that is a proper prefix of some stop string.
#include "sampling/stop_matcher.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda {

namespace {

// Bytes at the end of `s` that start a UTF-8 character without finishing it.
size_t incomplete_utf8(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t len = c >= 0xF0 && c <= 0xF7 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC0 && c < 0xE0 ? 2 : 1;
    return len > back ? back : 0;
  }
  return 0;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  for (size_t i = 0; i < stops_.size(); ++i)
    if (stops_[i].empty()) fail<InvalidArgument>("stop strings must not be empty (stop[{}] is)", i);
}

size_t StopMatcher::unsafe_tail() const {
  const std::string_view text = held_;
  size_t hold = incomplete_utf8(text);
  for (const auto& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, text.size()); len > hold; --len) {
      if (text.ends_with(std::string_view(stop).substr(0, len))) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

StopMatcher::Step StopMatcher::push(std::string_view delta, bool can_stop) {
  if (stopped()) return {{}, true};
  held_ += delta;
  if (!can_stop) {
    const size_t safe = held_.size() - unsafe_tail();
    Step step{held_.substr(0, safe), false};
    held_.erase(0, safe);
    return step;
  }

  // The stop string that completes first, then the one that starts first.
  size_t best_start = std::string::npos, best_end = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t start = held_.find(stops_[i]);
    if (start == std::string::npos) continue;
    const size_t end = start + stops_[i].size();
    if (end < best_end || (end == best_end && start < best_start)) {
      best_start = start;
      best_end = end;
      stop_index_ = int(i);
    }
  }
  if (stopped()) {
    Step step{held_.substr(0, include_stop_ ? best_end : best_start), true};
    held_.clear();
    return step;
  }

  const size_t safe = held_.size() - unsafe_tail();
  Step step{held_.substr(0, safe), false};
  held_.erase(0, safe);
  return step;
}

std::string StopMatcher::flush() {
  std::string rest;
  if (!stopped()) rest.swap(held_);
  return rest;
}

}  // namespace pagoda
