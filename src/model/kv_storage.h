// The K/V bytes of the paged cache: a pool of fixed-size blocks ("pages") of
// `block_size` token slots, each slot holding the K (or V) vectors of all KV
// heads of one token, for the layers of one KV group (kv/kv_groups.h). Which
// block belongs to which sequence is not known here: callers pass block
// tables per group (see kv/batch.h), and the block manager (src/kv) owns
// those ids. With one group of every layer (the default) a block holds every
// layer: the plain paged cache.
//
// Element type F32 (the default) or F16 (half the memory; attention then
// rounds Q and the attention weights to F16 too, as llama.cpp's CPU path
// does, so its results match an F16-cache llama.cpp closely).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_groups.h"
#include "kv/types.h"
#include "model/config.h"
#include "util/zero_pages.h"

namespace pagoda {

// The model's attention layers grouped by their windows (kv_groups.h), or
// (by_window false) in one full-attention group; recurrent layers keep no K/V.
KvGroups kv_groups_of(const ModelConfig& cfg, bool by_window = true);

class KvStorage {
 public:
  // ResourceExhausted if the memory cannot be had. Without `groups`, one
  // group of every layer (nothing is ever given back behind a window).
  KvStorage(const ModelConfig& cfg, int num_blocks, int block_size, KvType type = KvType::F32);
  KvStorage(const ModelConfig& cfg, KvGroups groups, int num_blocks, int block_size, KvType type = KvType::F32);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
  const KvGroups& groups() const { return groups_; }
  int num_groups() const { return groups_.num_groups(); }
  int group_of(int layer) const { return groups_.group_of[size_t(layer)]; }
  size_t bytes() const { return 2 * size_t(slots_) * num_blocks_ * block_size_ * kv_dim_ * kv_type_bytes(type_); }

  // Stores one token's K and V (kv_dim floats each) in a slot of a block of
  // the layer's group.
  void write(int layer, int block, int slot, const float* k, const float* v);

  // Slot addresses, for the attention kernels (element type per type()).
  const float* k_f32(int layer, int block, int slot) const { return k32_.data() + offset(layer, block, slot); }
  const float* v_f32(int layer, int block, int slot) const { return v32_.data() + offset(layer, block, slot); }
  const uint16_t* k_f16(int layer, int block, int slot) const { return k16_.data() + offset(layer, block, slot); }
  const uint16_t* v_f16(int layer, int block, int slot) const { return v16_.data() + offset(layer, block, slot); }

  // Copy-on-write support: duplicates one block's K/V (every layer of its group).
  void copy_block(int src, int dst);

 private:
  // A block holds its group's layers one after another; layer l is at its
  // place in its group (slot_of), so the same offset serves every group.
  size_t offset(int layer, int block, int slot) const {
    return ((size_t(groups_.slot_of[size_t(layer)]) * num_blocks_ + block) * block_size_ + slot) * kv_dim_;
  }
  KvGroups groups_;
  int slots_, num_blocks_, block_size_, kv_dim_;  // slots_: layers a block holds
  KvType type_;
  // Touched page by page as contexts fill, so a large pool costs nothing at start.
  ZeroPages<float> k32_, v32_;     // used when type_ == F32
  ZeroPages<uint16_t> k16_, v16_;  // used when type_ == F16
};

}  // namespace pagoda
