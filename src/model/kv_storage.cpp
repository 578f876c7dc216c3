#include "model/kv_storage.h"

#include <algorithm>
#include <new>
#include <utility>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {

KvGroups kv_groups_of(const ModelConfig& cfg, bool by_window) {
  std::vector<int32_t> windows;
  for (const LayerSpec& l : cfg.layers) windows.push_back(l.recurrent ? kNoKv : by_window ? l.window : 0);
  return KvGroups::of_layers(windows);
}

KvStorage::KvStorage(const ModelConfig& cfg, int num_blocks, int block_size, KvType type)
    : KvStorage(cfg, kv_groups_of(cfg, false), num_blocks, block_size, type) {}

KvStorage::KvStorage(const ModelConfig& cfg, KvGroups groups, int num_blocks, int block_size, KvType type)
    : groups_(std::move(groups)),
      slots_(groups_.layers_per_group),
      num_blocks_(num_blocks),
      block_size_(block_size),
      kv_dim_(cfg.kv_dim()),
      type_(type) {
  if (num_blocks <= 0 || block_size <= 0) fail<InvalidArgument>("KV cache needs at least one block of one token");
  if (groups_.num_layers() != cfg.n_layer)
    fail<InvalidArgument>("KV groups of {} layers for a model of {}", groups_.num_layers(), cfg.n_layer);
  // A group's window must cover each of its layers' (0, full, covers any).
  for (int l = 0; l < cfg.n_layer; ++l) {
    const bool recurrent = size_t(l) < cfg.layers.size() && cfg.layers[size_t(l)].recurrent;
    if (recurrent != (group_of(l) == kNoKv))
      fail<InvalidArgument>("layer {} is {}recurrent but its KV groups say otherwise", l, recurrent ? "" : "not ");
    if (recurrent) continue;
    const int w = groups_.windows[size_t(group_of(l))];
    if (w == 0) continue;
    const int want = size_t(l) < cfg.layers.size() ? cfg.layers[size_t(l)].window : 0;
    if (want == 0 || want > w)
      fail<InvalidArgument>("layer {} attends over {} positions but its KV group keeps {}", l, want, w);
  }
  const size_t n = size_t(slots_) * num_blocks_ * block_size_ * kv_dim_;
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
  const size_t o = offset(layer, block, slot);
  if (type_ == KvType::F32) {
    std::copy_n(k, kv_dim_, k32_.data() + o);
    std::copy_n(v, kv_dim_, v32_.data() + o);
  } else {
    for (int i = 0; i < kv_dim_; ++i) {
      k16_[o + size_t(i)] = f32_to_f16(k[i]);
      v16_[o + size_t(i)] = f32_to_f16(v[i]);
    }
  }
}

void KvStorage::copy_block(int src, int dst) {
  if (src < 0 || dst < 0 || src >= num_blocks_ || dst >= num_blocks_)
    fail<InvalidArgument>("KV block copy {} -> {} is out of range", src, dst);
  const size_t len = size_t(block_size_) * kv_dim_;
  auto copy = [&](auto& buf) {
    if (buf.empty()) return;
    for (int i = 0; i < slots_; ++i) {
      const size_t layer_base = size_t(i) * num_blocks_;
      std::copy_n(buf.data() + ((layer_base + size_t(src)) * block_size_) * kv_dim_, len,
                  buf.data() + ((layer_base + size_t(dst)) * block_size_) * kv_dim_);
    }
  };
  copy(k32_);
  copy(v32_);
  copy(k16_);
  copy(v16_);
}

}  // namespace pagoda
