// One sequence as the scheduler sees it: its tokens, how many of them have
// K/V in the cache, and where it stands in an explicit state machine:
//
//   waiting --admit--> prefill --last prompt chunk--> decode --> finished
//      ^                  |                              |
//      +----preempted <---+------------------------------+
//
// Any state can go to finished (stop, length, abort, timeout, error), and
// finished is terminal. Sampling state (RNG, detokenizer, stop strings) is
// the engine's, not the scheduler's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/types.h"

namespace pagoda {

enum class SeqState { waiting, prefill, decode, preempted, finished };
const char* to_string(SeqState s);

struct Sequence {
  SeqId id = 0;
  SeqState state = SeqState::waiting;
  std::vector<TokenId> tokens;  // prompt, then generated tokens
  int32_t num_prompt = 0;
  int32_t num_computed = 0;  // leading tokens whose K/V a committed step wrote
  int32_t num_cached = 0;    // prompt tokens the prefix cache served at first admission
  int32_t max_len = 0;       // prompt + max_tokens, capped at max_model_len
  int32_t priority = 0;      // lower runs first (vLLM's convention)
  uint64_t arrival = 0;      // admission order among equal priorities
  std::string cache_salt;
  bool skip_prefix_cache = false;  // computes every prompt position (prompt logprobs need their logits)
  // A non-causal model's input: all of it in one pass (never chunked, never
  // admitted in part; a preempted one recomputes whole), no cached prefix.
  bool whole = false;

  // Fairness bookkeeping (see scheduler.h).
  int32_t preemptions = 0;
  int32_t bypassed = 0;  // later requests admitted while this one waited at the head
  bool boosted = false;  // preempted too often: resumes ahead of everyone
  int64_t preempted_at_step = -1;

  int32_t num_tokens() const { return int32_t(tokens.size()); }
  int32_t num_output() const { return num_tokens() - num_prompt; }
  bool is_running() const { return state == SeqState::prefill || state == SeqState::decode; }
  bool is_queued() const { return state == SeqState::waiting || state == SeqState::preempted; }
};

}  // namespace pagoda
