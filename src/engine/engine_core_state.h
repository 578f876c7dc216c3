// Engine core's private state types, shared by its translation units
// (engine_core.cpp: requests and the step; engine_sampling.cpp: what happens
// to a step's logits). Not part of the engine's interface.
#pragma once

#include <optional>
#include <vector>

#include "engine/constraint.h"
#include "engine/engine_core.h"

namespace pagoda {
// One request: its parameters, its reader, and its choices' sequences.
struct EngineCore::RequestState {
  uint64_t id = 0;
  Request request;
  OutputSink sink;
  double arrival_time = 0, deadline = 0;
  double first_token_time = -1, last_token_time = -1;
  double scheduled_time = -1;  // first time a step carried it (vLLM's queue time ends here)
  int64_t generated = 0;       // tokens generated over all choices
  std::vector<SeqId> choices;  // one sequence per choice, index = choice number
  int32_t open_choices = 0;
  int32_t num_cached_tokens = 0;
  std::vector<GeneratedLogprobs> prompt_logprobs;  // prompt tokens 1.., once computed
  bool forked = false;
  bool reader_gone = false;
  FinishReason outcome = FinishReason::none;
};

// The engine's view of one sequence: the scheduler's Sequence plus sampling
// and output state. The RNG and history live here, so they survive preemption.
struct EngineCore::SeqRun {
  Sequence seq;
  RequestState* req = nullptr;
  int32_t choice = 0;
  Rng rng{0};
  TokenHistory history;
  std::optional<IncrementalDecoder> decoder;
  std::optional<StopMatcher> stops;
  std::optional<SeqConstraint> constraint;  // constrained decoding (constraint.h)
  std::optional<TokenId> stop_token;        // the stop_token_ids entry that ended it
  bool want_prompt_logprobs = false;        // the request's first choice, with prompt_logprobs
  int32_t prompt_logprobs_next = 0;         // prompt positions whose logits are recorded
  // An embedding model's pooled hidden state (mean: the running sum) and the
  // prompt positions in it: a recompute after preemption adds none twice.
  std::vector<float> pooled;
  int32_t pooled_next = 0;
  bool finished = false;
};

}  // namespace pagoda
