#include "model/kv_storage.h"

#include <algorithm>
#include <new>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {

KvStorage::KvStorage(const ModelConfig& cfg, int num_blocks, int block_size, KvType type)
    : n_layer_(cfg.n_layer), num_blocks_(num_blocks), block_size_(block_size), kv_dim_(cfg.kv_dim()), type_(type) {
  if (num_blocks <= 0 || block_size <= 0) fail<InvalidArgument>("KV cache needs at least one block of one token");
  const size_t n = size_t(n_layer_) * num_blocks_ * block_size_ * kv_dim_;
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
    for (int l = 0; l < n_layer_; ++l) std::copy_n(buf.data() + offset(l, src, 0), len, buf.data() + offset(l, dst, 0));
  };
  copy(k32_);
  copy(v32_);
  copy(k16_);
  copy(v16_);
}

}  // namespace pagoda
