// TokenHistory: the flat entry list plus a token -> entry index.
#include "sampling/history.h"

#include "util/error.h"

namespace pagoda {

TokenHistory::TokenHistory(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  add_prompt(prompt);
  for (int32_t t : output) add_output(t);
}

TokenHistory::Entry& TokenHistory::entry(int32_t token) {
  if (token < 0) fail<InvalidArgument>("token id must be >= 0, got {}", token);
  auto [it, inserted] = index_.try_emplace(token, uint32_t(entries_.size()));
  if (inserted) entries_.push_back({token, false, 0});
  return entries_[it->second];
}

const TokenHistory::Entry* TokenHistory::find(int32_t token) const {
  auto it = index_.find(token);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

void TokenHistory::add_prompt(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) entry(t).in_prompt = true;
}

void TokenHistory::add_output(int32_t token) {
  entry(token).output_count++;
  output_length_++;
}

bool TokenHistory::in_prompt(int32_t token) const {
  const Entry* e = find(token);
  return e && e->in_prompt;
}

int32_t TokenHistory::output_count(int32_t token) const {
  const Entry* e = find(token);
  return e ? e->output_count : 0;
}

}  // namespace pagoda
