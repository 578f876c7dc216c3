// A KvEventBatch as vLLM's msgpack EventBatch, the payload llm-d's kv-cache
// manager (pkg/kvcache/kvevents) and Dynamo decode:
//   [timestamp: float64, [event...], data_parallel_rank: 0]
//   ["BlockStored", [hash: uint64], parent_hash: uint64 | nil, [token_id...],
//    block_size, lora_id: nil, medium: nil]
//   ["BlockRemoved", [hash: uint64...], medium: nil]
//   ["AllBlocksCleared"]
// One BlockStored per block; consecutive removals share one BlockRemoved.
// medium nil: the engine's own KV pool (the default tier for llm-d).
#pragma once

#include <string>

#include "engine/kv_events.h"

namespace pagoda::events {

std::string encode_event_batch(const KvEventBatch& batch, int32_t block_size);

}  // namespace pagoda::events
