// The tokens a request has seen so far, kept as per-token counts so that the
// penalties cost O(distinct tokens seen), not O(vocabulary) or O(length).
// The engine builds one from the prompt and calls add_output() after each
// sampled token; it is a plain value, so it survives preemption by copy (or is
// rebuilt from the prompt and output token lists).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace pagoda {

class TokenHistory {
 public:
  struct Entry {
    int32_t token;
    bool in_prompt;        // repetition_penalty looks at prompt and output
    int32_t output_count;  // frequency/presence penalties look at output only
  };

  TokenHistory() = default;
  explicit TokenHistory(std::span<const int32_t> prompt, std::span<const int32_t> output = {});

  // Token ids must be >= 0 (InvalidArgument otherwise); the sampler checks
  // them against the vocabulary size when a penalty applies.
  void add_prompt(std::span<const int32_t> tokens);
  void add_output(int32_t token);

  // One entry per distinct token, in order of first appearance.
  std::span<const Entry> entries() const { return entries_; }
  bool in_prompt(int32_t token) const;
  int32_t output_count(int32_t token) const;
  int64_t output_length() const { return output_length_; }

 private:
  Entry& entry(int32_t token);
  const Entry* find(int32_t token) const;

  std::vector<Entry> entries_;
  std::unordered_map<int32_t, uint32_t> index_;  // token -> position in entries_
  int64_t output_length_ = 0;
};

}  // namespace pagoda
