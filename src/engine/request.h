// What a client submits to the engine and what it gets back. Outputs are
// pushed to the request's sink on the engine thread, as deltas, so the sink
// must only queue them (never block). A sink that returns false says the
// reader is gone: the request is aborted at the start of the next step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/types.h"
#include "sampling/finish.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"

namespace pagoda::grammar {
class MaskTables;
}

namespace pagoda {

struct Request {
  std::vector<TokenId> prompt;
  SamplingParams sampling;
  int32_t n = 1;                    // choices, sharing the prompt's KV blocks
  int32_t priority = 0;             // lower runs first
  std::string cache_salt;           // prefix-cache isolation
  std::optional<double> timeout_s;  // default: the engine's --request-timeout
  // Constrained decoding: the compiled grammar's mask tables for this
  // tokenizer (compiled off the engine thread); null = unconstrained. Every
  // choice's output is a prefix of the grammar's language, and an output
  // that ends with `stop` on an end-of-generation token or the grammar's own
  // end is in it.
  std::shared_ptr<const grammar::MaskTables> constraint;
  // A lazy constraint (llama.cpp's grammar trigger): when set, the output is
  // free until its decoded text holds this text (a reasoning model's
  // "</think>"), and the grammar applies to what follows, from the text
  // after it in the same token (leading whitespace dropped).
  std::string constraint_after;
  // With constraint_after: the model may open with this text first (qwen3's
  // "<think>"); until the output shows whether it does, the grammar's tokens
  // and those that keep it a possible opening are allowed. Not opened: the
  // grammar applies from the first token; opened: it waits for the trigger.
  std::string constraint_gate;
  // The logprob of every prompt token after the first, with this many most
  // likely tokens ([0, 20]), under the plain log-softmax (vLLM's
  // prompt_logprobs). Such a request skips the prefix cache: a cached prefix
  // has no logits. Absent: none, at no cost.
  std::optional<int32_t> prompt_logprobs;
};

struct GeneratedLogprobs {
  TokenId token = 0;
  float logprob = 0;              // of the sampled token, plain log-softmax
  std::vector<TokenLogprob> top;  // sampling.logprobs most likely tokens
  int32_t rank = 0;               // prompt logprobs: 1 + tokens more likely than `token`
};

struct RequestOutput {
  uint64_t request_id = 0;
  int32_t choice = 0;
  std::vector<TokenId> tokens;              // new tokens in this delta
  std::string text;                         // new text (stop strings held back, never emitted)
  std::vector<GeneratedLogprobs> logprobs;  // one per new token, when asked
  // Request::prompt_logprobs: prompt tokens 1.. (entry i is token i + 1), on
  // a delta of its own before each choice's first token.
  std::vector<GeneratedLogprobs> prompt_logprobs;
  FinishReason finish = FinishReason::none;  // set on the choice's last delta
  std::string error;                         // the cause, when finish is error
  // With finish stop, what stopped it when the request's own stops did (vLLM's
  // stop_reason): one of its stop strings, or its stop_token_ids entry. Neither
  // for an end-of-generation token or the grammar's end.
  std::optional<std::string> stop_string;
  std::optional<TokenId> stop_token;
  // An embedding model's output: the prompt's pooled hidden state (not
  // normalised), on the terminal delta of a request that ends with stop.
  std::vector<float> embedding;
  bool request_done = false;  // set on the request's very last delta
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;  // prompt tokens served by the prefix cache
};

using OutputSink = std::function<bool(RequestOutput&&)>;

}  // namespace pagoda
