// Streaming detokenization for one generated sequence: turns ids into text as
// they arrive, never emitting half a UTF-8 character (a character split over
// several byte tokens comes out whole once complete) and replacing invalid
// bytes with U+FFFD. Never throws.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace pagoda {

class IncrementalDecoder {
 public:
  // strip_leading_space drops the dummy-prefix space of the first visible
  // token, for output that starts a text (as decode does). Generation that
  // continues a prompt keeps it: after "Once upon a time", "▁there" must
  // render as " there". Byte-level BPE has no dummy prefix, so there it
  // changes nothing. keep_special renders control tokens (<s>, <|im_end|>)
  // as their text (vLLM's skip_special_tokens=false); by default they render
  // as nothing. The tokenizer must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& t, bool strip_leading_space = false, bool keep_special = false)
      : tok_(&t), strip_leading_space_(strip_leading_space && !t.byte_level()), keep_special_(keep_special) {}

  // The text completed by this token (possibly empty).
  std::string push(int32_t id);
  // End of stream: anything held back (an unfinished character) as U+FFFD.
  std::string flush();

  bool has_pending() const { return !pending_.empty(); }

 private:
  const Tokenizer* tok_;
  bool strip_leading_space_;
  bool keep_special_;
  bool seen_visible_ = false;
  std::string pending_;  // bytes of a character not yet complete (at most 3)
};

}  // namespace pagoda
