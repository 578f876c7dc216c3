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
#include <vector>

#include "kv/kv_groups.h"
#include "kv/types.h"
#include "model/config.h"
#include "util/zero_pages.h"

namespace pagoda {

// The model's attention layers grouped by their windows (kv_groups.h), or
// (by_window false) in one full-attention group; recurrent layers and layers
// reading another's K/V (LayerSpec::kv_source) keep none.
KvGroups kv_groups_of(const ModelConfig& cfg, bool by_window = true);

// InvalidArgument unless `groups` place the model's layers as kv_groups_of()
// would allow: every layer with K/V of its own in one group and slot, none
// other, each group's window covering its layers'.
void check_kv_groups(const ModelConfig& cfg, const KvGroups& groups);

// Floats of K (as many of V) one token takes at each slot of a page: the
// widest kv_dim among the layers that the groups put at that slot (layers of
// different head sizes, gemma4's, sit at one slot only in different groups).
std::vector<int> kv_slot_dims(const ModelConfig& cfg, const KvGroups& groups);
// The pool's bytes per token of context (kv/pool_size.h): every group's page
// share, each page holding the slots above, K and V, in `type`.
int64_t kv_bytes_per_token(const ModelConfig& cfg, const KvGroups& groups, KvType type);

class KvStorage {
 public:
  // ResourceExhausted if the memory cannot be had. Without `groups`, one
  // group of every layer (nothing is ever given back behind a window).
  KvStorage(const ModelConfig& cfg, int num_blocks, int block_size, KvType type = KvType::F32);
  KvStorage(const ModelConfig& cfg, KvGroups groups, int num_blocks, int block_size, KvType type = KvType::F32);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  // Floats between a block's token slots for the layer (its slot's width, at least its own kv_dim).
  int kv_stride(int layer) const { return slot_dim_[size_t(groups_.slot_of[size_t(layer)])]; }
  KvType type() const { return type_; }
  const KvGroups& groups() const { return groups_; }
  int num_groups() const { return groups_.num_groups(); }
  int group_of(int layer) const { return groups_.group_of[size_t(layer)]; }
  size_t bytes() const { return 2 * floats_ * kv_type_bytes(type_); }

  // Stores one token's K and V (the layer's kv_dim floats each) in a slot of
  // a block of the layer's group.
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
  // Slot i's blocks lie together from slot_base_[i], slot_dim_[i] floats a token.
  size_t offset(int layer, int block, int slot) const {
    const size_t i = size_t(groups_.slot_of[size_t(layer)]);
    return slot_base_[i] + (size_t(block) * block_size_ + size_t(slot)) * size_t(slot_dim_[i]);
  }
  KvGroups groups_;
  int slots_, num_blocks_, block_size_;  // slots_: layers a block holds
  std::vector<int> layer_dim_;           // per layer: its K (and V) floats a token
  std::vector<int> slot_dim_;            // per slot: kv_slot_dims()
  std::vector<size_t> slot_base_;        // per slot: where its blocks start
  size_t floats_ = 0;                    // of K (as many of V)
  KvType type_;
  // Touched page by page as contexts fill, so a large pool costs nothing at start.
  ZeroPages<float> k32_, v32_;     // used when type_ == F32
  ZeroPages<uint16_t> k16_, v16_;  // used when type_ == F16
};

}  // namespace pagoda
