#include "engine/cpu_runner.h"

#include <new>

#include "util/error.h"

namespace pagoda {

CpuRunner::CpuRunner(std::shared_ptr<Model> model, int num_blocks, int block_size, KvType kv_type, int threads)
    : CpuRunner(model, kv_groups_of(model->config()), num_blocks, block_size, kv_type, threads) {}

CpuRunner::CpuRunner(std::shared_ptr<Model> model, KvGroups groups, int num_blocks, int block_size, KvType kv_type,
                     int threads, int state_slots, int state_checkpoints)
    : model_(std::move(model)),
      kv_(model_->config(), std::move(groups), num_blocks, block_size, kv_type),
      pool_(threads) {
  const bool recurrent = model_->config().n_recurrent_layers() > 0;
  if (recurrent != (state_slots > 0))
    fail<InvalidArgument>("{} recurrent-state slots for a model with {} recurrent layers", state_slots,
                          model_->config().n_recurrent_layers());
  if (recurrent) states_ = std::make_unique<StateStorage>(model_->config(), state_slots, state_checkpoints);
}

void CpuRunner::copy_states(std::span<const StateCopy> copies) {
  if (!states_ && !copies.empty()) fail<InvalidArgument>("this model keeps no recurrent state to copy");
  for (const auto& c : copies) states_->copy(c.src, c.dst);
}

void CpuRunner::copy_blocks(std::span<const BlockCopy> copies) {
  for (const auto& c : copies) kv_.copy_block(c.src, c.dst);
}

void CpuRunner::forward(const Batch& batch, std::vector<float>& logits) {
  try {
    model_->forward(batch, kv_, pool_, logits, states_.get());
  } catch (const std::bad_alloc&) {
    fail<ResourceExhausted>("out of memory in the forward pass of {} tokens", batch.tokens.size());
  }
}

}  // namespace pagoda
