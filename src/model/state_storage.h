// The bytes of the recurrent state of a hybrid model's sequences (kv/types.h):
// two buffers per slot, each holding every recurrent layer's convolution
// state (the last conv_kernel - 1 inputs, oldest first: (K-1) x C) and its
// per-value-head matrices (H_v x dv x dk). Which slot is whose is not known
// here: the batch names the buffers each sequence reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/types.h"
#include "model/config.h"
#include "util/zero_pages.h"

namespace pagoda {

class StateStorage {
 public:
  // ResourceExhausted if the memory cannot be had.
  // Two buffers per slot, then `num_checkpoints` checkpoint buffers
  // (kv/state_checkpoints.h).
  StateStorage(const ModelConfig& cfg, int num_slots, int num_checkpoints = 0);

  int num_slots() const { return num_slots_; }
  int num_checkpoints() const { return num_checkpoints_; }
  int num_buffers() const { return 2 * num_slots_ + num_checkpoints_; }
  size_t bytes() const { return data_.size() * sizeof(float); }

  // Layer `layer`'s parts of buffer b (the layer must be recurrent).
  float* conv(StateBuffer b, int layer) { return data_.data() + offset(b, layer); }
  float* matrices(StateBuffer b, int layer) { return conv(b, layer) + conv_floats_; }

  // Every layer's state at once: a fork's child from its parent's, a
  // checkpoint from a sequence's, a sequence from a checkpoint.
  void copy(StateBuffer src, StateBuffer dst);

 private:
  size_t offset(StateBuffer b, int layer) const;

  int num_slots_, num_checkpoints_;
  size_t conv_floats_, layer_floats_, buffer_floats_;
  std::vector<int> index_;  // per layer: its place among the recurrent layers, or -1
  ZeroPages<float> data_;   // touched as sequences first use their slots
};

}  // namespace pagoda
