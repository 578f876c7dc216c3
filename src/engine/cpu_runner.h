// The CPU backend: a Model over its own paged K/V storage and thread
// pool. Its storage is laid out in KV groups (kv/kv_groups.h): by default the
// model's (sliding-window layers give back what their window left behind),
// or one group of every layer.
#pragma once

#include <memory>

#include "engine/model_runner.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "model/state_storage.h"
#include "util/thread_pool.h"

namespace pagoda {

class CpuRunner : public ModelRunner {
 public:
  CpuRunner(std::shared_ptr<Model> model, int num_blocks, int block_size, KvType kv_type, int threads);
  // state_slots: recurrent-state slots (kv/types.h) for a hybrid model; 0 for
  // one without recurrent layers.
  CpuRunner(std::shared_ptr<Model> model, KvGroups groups, int num_blocks, int block_size, KvType kv_type, int threads,
            int state_slots = 0, int state_checkpoints = 0);

  // Serves the model as an embedding model pooled this way (none: generating).
  void set_pooling(Pooling p) {
    pooling_ = p;
    model_->set_hidden_output(p != Pooling::none);
  }

  int32_t vocab_size() const override { return model_->config().n_vocab; }
  Pooling pooling() const override { return pooling_; }
  bool causal() const override { return model_->config().causal; }
  int32_t output_width() const override { return model_->output_width(); }
  bool rank_reads_last() const override { return model_->rank_reads_last(); }
  void rank(std::vector<float>& pooled) override { pooled = model_->rank_scores(pooled, pool_); }
  int32_t context_length() const override { return model_->config().n_ctx_train; }
  std::vector<int32_t> kv_group_windows() const override { return kv_.groups().windows; }
  void copy_blocks(std::span<const BlockCopy> copies) override;
  int32_t state_slots() const override { return states_ ? states_->num_slots() : 0; }
  int32_t state_checkpoints() const override { return states_ ? states_->num_checkpoints() : 0; }
  void copy_states(std::span<const StateCopy> copies) override;
  void forward(const Batch& batch, std::vector<float>& logits) override;
  int experts_run() const override { return model_->experts_run(); }
  ThreadPool* host_pool() override { return &pool_; }

  const KvStorage& storage() const { return kv_; }

 private:
  std::shared_ptr<Model> model_;
  KvStorage kv_;
  ThreadPool pool_;
  std::unique_ptr<StateStorage> states_;  // a hybrid model's recurrent states; null without
  Pooling pooling_ = Pooling::none;
};

}  // namespace pagoda
