// The grouping rule and the page counts of kv_groups.h.
#include "kv/kv_groups.h"

#include <algorithm>
#include <climits>
#include <map>
#include <numeric>

#include "util/error.h"

namespace pagoda {

KvGroups KvGroups::of_layers(std::span<const int32_t> layer_windows) {
  if (layer_windows.empty()) fail<InvalidArgument>("KV groups need at least one layer");
  std::map<int32_t, std::vector<int32_t>> classes;  // window -> its layers; full (0) first
  for (size_t l = 0; l < layer_windows.size(); ++l) {
    if (layer_windows[l] < kNoKv) fail<InvalidArgument>("layer {} has window {}", l, layer_windows[l]);
    if (layer_windows[l] != kNoKv) classes[layer_windows[l]].push_back(int32_t(l));
  }
  if (classes.empty()) fail<InvalidArgument>("KV groups need at least one layer that keeps K/V");
  KvGroups g;
  for (const auto& [window, layers] : classes)
    g.layers_per_group = std::gcd(g.layers_per_group, int32_t(layers.size()));
  g.group_of.assign(layer_windows.size(), kNoKv);
  g.slot_of.assign(layer_windows.size(), kNoKv);
  for (const auto& [window, layers] : classes) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (i % size_t(g.layers_per_group) == 0) g.windows.push_back(window);
      g.group_of[size_t(layers[i])] = g.num_groups() - 1;
      g.slot_of[size_t(layers[i])] = int32_t(i % size_t(g.layers_per_group));
    }
  }
  // Block records name a group in a byte.
  if (g.num_groups() > 255) fail<Unsupported>("{} KV groups are more than the 255 supported", g.num_groups());
  return g;
}

KvGroups KvGroups::single(int32_t n_layer) {
  if (n_layer < 1) fail<InvalidArgument>("KV groups need at least one layer");
  KvGroups g;
  g.layers_per_group = n_layer;
  g.windows = {0};
  g.group_of.assign(size_t(n_layer), 0);
  g.slot_of.resize(size_t(n_layer));
  std::iota(g.slot_of.begin(), g.slot_of.end(), 0);
  return g;
}

int64_t KvGroups::pages_at_rest(int64_t tokens, int32_t block_size) const {
  const int64_t blocks = (tokens + block_size - 1) / block_size;
  int64_t pages = 0;
  for (int32_t w : windows) pages += blocks - blocks_behind_window(w, tokens, block_size);
  return pages;
}

int64_t KvGroups::pages_at_most(int64_t tokens, int32_t chunk, int32_t block_size) const {
  const int64_t blocks = (tokens + block_size - 1) / block_size;
  int64_t pages = 0;
  for (int32_t w : windows) {
    // From the oldest position a step's first query reads to its chunk's
    // last: w + chunk - 1 positions, over at most one block more than they fill.
    const int64_t span = (int64_t(w) + chunk - 1 + block_size - 1) / block_size + 1;
    pages += w == 0 ? blocks : std::min(blocks, span);
  }
  return pages;
}

int64_t KvGroups::max_tokens(int64_t pages, int32_t chunk, int32_t block_size) const {
  int64_t lo = 0, hi = INT32_MAX;  // pages_at_most grows with the tokens: a binary search
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (pages_at_most(mid, chunk, block_size) <= pages)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace pagoda
