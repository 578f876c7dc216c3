// Bytes accumulate in `pending_`; each push emits every whole character and
// keeps back only a valid-but-unfinished tail.
#include "tokenizer/incremental_decoder.h"

#include "tokenizer/utf8.h"

namespace pagoda {

std::string IncrementalDecoder::push(int32_t id) {
  std::string bytes = tok_->decode_bytes(id);
  if (bytes.empty() && keep_special_ && tok_->vocab().valid(id) && tok_->token_type(id) == TokenType::Control)
    bytes = tok_->token_text(id);
  if (bytes.empty()) return {};
  if (!seen_visible_) {
    seen_visible_ = true;
    if (strip_leading_space_ && bytes[0] == ' ') bytes.erase(0, 1);
  }
  pending_ += bytes;
  std::string out;
  const size_t used = utf8_sanitize_append(pending_, /*final=*/false, out);
  pending_.erase(0, used);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  utf8_sanitize_append(pending_, /*final=*/true, out);
  pending_.clear();
  return out;
}

}  // namespace pagoda
