// Which steps a CUDA graph can run, and the upload padded to the graph's
// shape. A graph replays fixed launches: the same token count, table width
// and buffers every time. So pure-decode steps (one token a sequence, every
// token's logits wanted) are rounded up to a bucket of 1, 2, 4, ..., 256
// tokens and their block tables widened to a power of two; one graph per
// (bucket, width), captured on first use (cuda/cuda_device.cpp). Mixed and
// prefill steps run eagerly.
//
// A padding token is token 0 at position 0 in a sequence of its own: its
// K/V are stored nowhere (slot -1), its table's first block is block 0 (in
// the pool, so its attention reads in bounds), its sequence is one position
// long; its logits row comes after every real one and is never read.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu/step_upload.h"

namespace pagoda::gpu {

inline constexpr int32_t kMaxGraphTokens = 256;  // the largest bucket

// A graph's key: its token bucket (also its sequences and logits rows) and
// its tables' width.
struct GraphKey {
  int32_t tokens = 0;
  int32_t width = 0;
  auto operator<=>(const GraphKey&) const = default;
};

// True for a pure-decode step of at most kMaxGraphTokens tokens: each
// sequence brings exactly one token and every token's logits are wanted.
bool graphable(const StepUpload& u);

// The smallest of 1, 2, 4, ..., 256 >= `tokens` (1..256).
int32_t graph_bucket(int32_t tokens);

// The smallest power of two >= `width`, at most `max_width` (the workspace's
// tables) and at least `width`: a table as wide as the workspace allows.
int32_t graph_width(int32_t width, int32_t max_width);

// The key of a graphable step on a workspace of tables `max_width` wide.
GraphKey graph_key(const StepUpload& u, int32_t max_width);

// `u` padded to `key`: its tokens, sequences and logits rows first and
// unchanged (sampled rows still first, D the same), every table widened with
// kNoBlock, then key.tokens - T padding tokens as above. InvalidArgument for a
// step that is not graphable or does not fit the key; `num_blocks` and
// `num_state_buffers` are the pools', for the padded upload's checks
// (StepUpload::from_words). A padding sequence has no recurrent state: it
// reads zeros and writes none.
StepUpload pad_for_graph(const StepUpload& u, const GraphKey& key, int32_t num_blocks, int32_t num_state_buffers = 0);

}  // namespace pagoda::gpu
