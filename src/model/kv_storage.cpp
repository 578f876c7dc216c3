#include "model/kv_storage.h"

#include <algorithm>
#include <new>
#include <utility>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {

KvGroups kv_groups_of(const ModelConfig& cfg, bool by_window) {
  std::vector<int32_t> windows;
  for (const LayerSpec& l : cfg.layers) windows.push_back(!l.has_kv() ? kNoKv : by_window ? l.window : 0);
  return KvGroups::of_layers(windows);
}

std::vector<int> kv_slot_dims(const ModelConfig& cfg, const KvGroups& groups) {
  std::vector<int> dims(size_t(std::max(groups.layers_per_group, 0)), 0);
  for (size_t l = 0; l < groups.slot_of.size() && l < cfg.layers.size(); ++l)
    if (const int slot = groups.slot_of[l]; slot >= 0 && size_t(slot) < dims.size())
      dims[size_t(slot)] = std::max(dims[size_t(slot)], cfg.layers[l].kv_dim());
  return dims;
}

int64_t kv_bytes_per_token(const ModelConfig& cfg, const KvGroups& groups, KvType type) {
  int64_t floats = 0;
  for (int d : kv_slot_dims(cfg, groups)) floats += d;
  return 2 * floats * int64_t(std::max(groups.num_groups(), 1)) * int64_t(kv_type_bytes(type));
}

void check_kv_groups(const ModelConfig& cfg, const KvGroups& groups) {
  if (groups.num_layers() != cfg.n_layer)
    fail<InvalidArgument>("KV groups of {} layers for a model of {}", groups.num_layers(), cfg.n_layer);
  if (cfg.layers.size() != size_t(cfg.n_layer)) fail<InvalidArgument>("a model of {} layer specs", cfg.layers.size());
  if (groups.slot_of.size() != groups.group_of.size())
    fail<InvalidArgument>("KV groups with {} slots for {} layers", groups.slot_of.size(), groups.group_of.size());
  // A group's window must cover each of its layers' (0, full, covers any).
  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerSpec& spec = cfg.layers[size_t(l)];
    const int32_t g = groups.group_of[size_t(l)], slot = groups.slot_of[size_t(l)];
    if (spec.has_kv() != (g != kNoKv))
      fail<InvalidArgument>("layer {} {} K/V of its own but its KV groups say otherwise", l,
                            spec.has_kv() ? "keeps" : "has no");
    if (!spec.has_kv()) continue;
    if (g < 0 || g >= groups.num_groups() || slot < 0 || slot >= groups.layers_per_group)
      fail<InvalidArgument>("layer {} in KV group {} slot {} of {} groups of {}", l, g, slot, groups.num_groups(),
                            groups.layers_per_group);
    const int w = groups.windows[size_t(g)];
    if (w == 0) continue;
    if (spec.window == 0 || spec.window > w)
      fail<InvalidArgument>("layer {} attends over {} positions but its KV group keeps {}", l, spec.window, w);
  }
}

KvStorage::KvStorage(const ModelConfig& cfg, int num_blocks, int block_size, KvType type)
    : KvStorage(cfg, kv_groups_of(cfg, false), num_blocks, block_size, type) {}

KvStorage::KvStorage(const ModelConfig& cfg, KvGroups groups, int num_blocks, int block_size, KvType type)
    : groups_(std::move(groups)),
      slots_(groups_.layers_per_group),
      num_blocks_(num_blocks),
      block_size_(block_size),
      type_(type) {
  if (num_blocks <= 0 || block_size <= 0) fail<InvalidArgument>("KV cache needs at least one block of one token");
  check_kv_groups(cfg, groups_);
  for (const LayerSpec& l : cfg.layers) layer_dim_.push_back(l.kv_dim());
  slot_dim_ = kv_slot_dims(cfg, groups_);
  for (int d : slot_dim_) {
    slot_base_.push_back(floats_);
    floats_ += size_t(num_blocks) * size_t(block_size) * size_t(d);
  }
  const size_t n = floats_;
  try {
    if (type == KvType::F32) {
      k32_ = ZeroPages<float>(n);
      v32_ = ZeroPages<float>(n);
    } else {
      k16_ = ZeroPages<uint16_t>(n);
      v16_ = ZeroPages<uint16_t>(n);
    }
  } catch (const ResourceExhausted&) {
    fail<ResourceExhausted>("cannot allocate the KV cache: {} blocks of {} tokens need {} MiB", num_blocks, block_size,
                            bytes() >> 20);
  }
}

void KvStorage::write(int layer, int block, int slot, const float* k, const float* v) {
  if (group_of(layer) == kNoKv) fail<InvalidArgument>("layer {} keeps no K/V to write", layer);
  const size_t o = offset(layer, block, slot);
  const int n = layer_dim_[size_t(layer)];
  if (type_ == KvType::F32) {
    std::copy_n(k, n, k32_.data() + o);
    std::copy_n(v, n, v32_.data() + o);
  } else {
    for (int i = 0; i < n; ++i) {
      k16_[o + size_t(i)] = f32_to_f16(k[i]);
      v16_[o + size_t(i)] = f32_to_f16(v[i]);
    }
  }
}

void KvStorage::copy_block(int src, int dst) {
  if (src < 0 || dst < 0 || src >= num_blocks_ || dst >= num_blocks_)
    fail<InvalidArgument>("KV block copy {} -> {} is out of range", src, dst);
  auto copy = [&](auto& buf) {
    if (buf.empty()) return;
    for (size_t i = 0; i < slot_dim_.size(); ++i) {
      const size_t len = size_t(block_size_) * size_t(slot_dim_[i]);
      std::copy_n(buf.data() + slot_base_[i] + size_t(src) * len, len, buf.data() + slot_base_[i] + size_t(dst) * len);
    }
  };
  copy(k32_);
  copy(v32_);
  copy(k16_);
  copy(v16_);
}

}  // namespace pagoda
