// Stop strings over streamed text. The engine pushes each detokenized delta;
// push() returns the text that is safe to send now and holds back any tail
// that could still become a stop string (or is an incomplete UTF-8 character).
// When a stop string completes, the text before it is released and the stop
// string and everything after it are dropped, as in OpenAI's API. At the end
// of a generation that did not stop, flush() releases what is held.
//
// If several stop strings match, the one that completes first in the stream
// wins (then the one that started first), so the result does not depend on how
// the text was split into deltas. include_stop (vLLM's include_stop_str_in_
// output) keeps the stop string itself at the end of the released text.
// push(delta, false) looks for no stop string in what it adds (vLLM's
// min_tokens: no stop before then); the held tail is searched again later.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

class StopMatcher {
 public:
  struct Step {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string completed; `text` runs up to its start
  };

  // Throws InvalidArgument for an empty stop string. No stops: text passes
  // through (still never splitting a UTF-8 character).
  explicit StopMatcher(std::vector<std::string> stops, bool include_stop = false);

  Step push(std::string_view delta, bool can_stop = true);
  std::string flush();

  bool stopped() const { return stop_index_ >= 0; }
  int stop_index() const { return stop_index_; }  // into the list given; -1 until stopped
  const std::string& held() const { return held_; }

 private:
  size_t unsafe_tail() const;

  std::vector<std::string> stops_;
  std::string held_;
  int stop_index_ = -1;
  bool include_stop_ = false;
};

}  // namespace pagoda
