// What a request asks of the sampler, and the one place that checks it.
// Field names and ranges follow OpenAI's API first, then vLLM's for the
// fields OpenAI does not have (top_k, min_p, repetition_penalty, ignore_eos).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

  static constexpr float kMaxTemperature = 2.0f;
  static constexpr float kMaxPenalty = 2.0f;  // |frequency_penalty|, |presence_penalty|
  static constexpr size_t kMaxStop = 16;
  static constexpr int32_t kMaxLogprobs = 20;

  // Throws InvalidArgument naming the first bad field and its allowed range.
  void validate() const;

  bool greedy() const { return temperature == 0.0f; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

}  // namespace pagoda
