// How a model's layers share the one KV block pool when some layers attend
// through a sliding window (Gemma 2/3, OLMo 3): vLLM's hybrid KV cache.
//
// Layers with the same window form a class; every class is cut, in layer
// order, into groups of G layers, G the gcd of the class sizes (a
// Gemma 3 1B, 4 global and 22 local layers: 2 full groups and 11 sliding
// groups of 2 layers). A block ("page") of the pool holds the K/V of one
// group's G layers for block_size tokens, so every page has the same bytes
// and any group can take any free page. Each sequence has one block table
// per group; a sliding group gives back the pages its window has left behind.
//
// Group 0 is the anchor: the full-attention group when there is one (full
// classes come first). Its prefix-cache chain proves what a prefix is; the
// other groups' cached blocks hang off the anchor's block at the same index.
// A model without windows has one group of all its layers: exactly the pool
// of a plain paged cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda {

// Leading blocks of a group's table that no query from position `computed`
// on reads: those wholly before computed - window + 1. 0 for full attention.
inline int32_t blocks_behind_window(int32_t window, int64_t computed, int32_t block_size) {
  if (window <= 0 || computed - window + 1 <= 0) return 0;
  return int32_t((computed - window + 1) / block_size);
}

// A layer that keeps no K/V (a recurrent layer of a hybrid model): its
// "window" in of_layers(), and its group and slot.
inline constexpr int32_t kNoKv = -1;

struct KvGroups {
  int32_t layers_per_group = 0;   // G: the layers one page holds
  std::vector<int32_t> windows;   // per group: 0 = full attention, else its window
  std::vector<int32_t> group_of;  // per layer: its group (kNoKv: the layer keeps no K/V)
  std::vector<int32_t> slot_of;   // per layer: its place among its group's G layers (kNoKv: none)

  // The grouping rule above, from each layer's window (0 = full, kNoKv: none).
  static KvGroups of_layers(std::span<const int32_t> layer_windows);
  // One full-attention group of every layer: a window-blind pool (every
  // layer keeps every block; --disable-hybrid-kv-cache-manager).
  static KvGroups single(int32_t n_layer);

  int32_t num_groups() const { return int32_t(windows.size()); }
  int32_t num_layers() const { return int32_t(group_of.size()); }

  // Pages a sequence holds between steps once `tokens` tokens are computed
  // (sliding groups: only what their window still needs).
  int64_t pages_at_rest(int64_t tokens, int32_t block_size) const;
  // The most pages a lone sequence of up to `tokens` tokens can hold in any
  // step, computing at most `chunk` tokens a step (a sliding group then
  // spans its window plus the chunk).
  int64_t pages_at_most(int64_t tokens, int32_t chunk, int32_t block_size) const;
  // The longest sequence whose every step fits in `pages` pages alone.
  int64_t max_tokens(int64_t pages, int32_t chunk, int32_t block_size) const;
};

}  // namespace pagoda
