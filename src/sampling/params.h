// What a request asks of the sampler, and the one place that checks it.
// Field names and ranges follow OpenAI's API first, then vLLM's for the
// fields OpenAI does not have (top_k, min_p, repetition_penalty, ignore_eos,
// stop_token_ids, min_tokens, include_stop_str_in_output, skip_special_tokens).
// Checks against the vocabulary (logit_bias keys, stop_token_ids) need its
// size: validate_vocab().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pagoda {

struct SamplingParams {
  float temperature = 1.0f;           // [0, 2]; 0 = greedy (argmax)
  int32_t top_k = 0;                  // 0 or -1 = disabled, else >= 1
  float top_p = 1.0f;                 // (0, 1]; 1 = disabled
  float min_p = 0.0f;                 // [0, 1]; 0 = disabled
  float repetition_penalty = 1.0f;    // > 0; 1 = off. Prompt and generated tokens.
  float frequency_penalty = 0.0f;     // [-2, 2]. Generated tokens only.
  float presence_penalty = 0.0f;      // [-2, 2]. Generated tokens only.
  std::optional<uint64_t> seed;       // absent = a nondeterministic seed
  std::optional<int32_t> max_tokens;  // >= 1; absent = until the context is full
  std::vector<std::string> stop;      // at most kMaxStop strings, none empty
  bool ignore_eos = false;            // keep going past EOS and the other end-of-generation ids
  std::optional<int32_t> logprobs;    // [0, 20]; absent = none, 0 = the sampled token's only
  // (token id, bias in [-100, 100]) added to that token's logit before every
  // other step; logprobs are of the biased logits (what was sampled from).
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<int32_t> stop_token_ids;      // end the generation like EOS (not part of the output)
  int32_t min_tokens = 0;                   // EOS and stop ids masked, stop strings off, before this many
  bool include_stop_str_in_output = false;  // a matched stop string stays at the end of the text
  bool skip_special_tokens = true;          // false: control tokens render as their text

  static constexpr float kMaxLogitBias = 100.0f;
  static constexpr size_t kMaxLogitBiasEntries = 1024;
  static constexpr size_t kMaxStopTokenIds = 64;

  static constexpr float kMaxTemperature = 2.0f;
  static constexpr float kMaxPenalty = 2.0f;  // |frequency_penalty|, |presence_penalty|
  static constexpr size_t kMaxStop = 16;
  static constexpr int32_t kMaxLogprobs = 20;

  // Throws InvalidArgument naming the first bad field and its allowed range.
  void validate() const;
  // Token ids (logit_bias keys, stop_token_ids) must be in [0, vocab_size).
  void validate_vocab(int64_t vocab_size) const;

  bool greedy() const { return temperature == 0.0f; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

}  // namespace pagoda
