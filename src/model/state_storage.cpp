#include "model/state_storage.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda {

StateStorage::StateStorage(const ModelConfig& cfg, int num_slots, int num_checkpoints)
    : num_slots_(num_slots),
      num_checkpoints_(num_checkpoints),
      conv_floats_(size_t(cfg.delta_net.conv_state_floats())),
      layer_floats_(conv_floats_ + size_t(cfg.delta_net.matrix_state_floats())) {
  if (num_slots < 1) fail<InvalidArgument>("a recurrent state pool needs at least one slot, not {}", num_slots);
  if (num_checkpoints < 0) fail<InvalidArgument>("{} state checkpoints", num_checkpoints);
  int n = 0;
  for (const LayerSpec& l : cfg.layers) index_.push_back(l.recurrent ? n++ : -1);
  if (n == 0) fail<InvalidArgument>("the model has no recurrent layers to keep state for");
  buffer_floats_ = layer_floats_ * size_t(n);
  try {
    data_ = ZeroPages<float>(buffer_floats_ * size_t(num_buffers()));
  } catch (const ResourceExhausted&) {
    fail<ResourceExhausted>("cannot allocate the recurrent state: {} slots of 2 x {} MiB and {} checkpoints", num_slots,
                            buffer_floats_ * sizeof(float) >> 20, num_checkpoints);
  }
}

size_t StateStorage::offset(StateBuffer b, int layer) const {
  if (b < 0 || b >= num_buffers()) fail<InvalidArgument>("state buffer {} outside the pool of {}", b, num_buffers());
  if (layer < 0 || size_t(layer) >= index_.size() || index_[size_t(layer)] < 0)
    fail<InvalidArgument>("layer {} keeps no recurrent state", layer);
  return size_t(b) * buffer_floats_ + size_t(index_[size_t(layer)]) * layer_floats_;
}

void StateStorage::copy(StateBuffer src, StateBuffer dst) {
  if (src < 0 || dst < 0 || src >= num_buffers() || dst >= num_buffers())
    fail<InvalidArgument>("state copy {} -> {} is out of range", src, dst);
  std::copy_n(data_.data() + size_t(src) * buffer_floats_, buffer_floats_, data_.data() + size_t(dst) * buffer_floats_);
}

}  // namespace pagoda
