// Fault injection on the model's side of the engine: a ModelRunner that
// wraps the real one and, as --inject-faults asks, sleeps before a step
// (slow), or fails a forward pass: always in step at_step, whenever the batch
// carries a poisoned request (poison), out of memory (oom) or at random
// (forward). The engine wraps its runner in one only when a fault is set, so
// the serving path without faults has no branch for them.
#pragma once

#include <memory>

#include "engine/faults.h"
#include "engine/model_runner.h"

namespace pagoda {

class FaultyRunner : public ModelRunner {
 public:
  // `faults` is the engine's injector (it also fails block allocations and
  // counts every fault); both live on the engine thread.
  FaultyRunner(std::unique_ptr<ModelRunner> inner, FaultInjector& faults) : inner_(std::move(inner)), faults_(faults) {}

  int32_t vocab_size() const override { return inner_->vocab_size(); }
  int32_t context_length() const override { return inner_->context_length(); }
  std::vector<int32_t> kv_group_windows() const override { return inner_->kv_group_windows(); }
  void copy_blocks(std::span<const BlockCopy> copies) override { inner_->copy_blocks(copies); }
  int32_t state_slots() const override { return inner_->state_slots(); }
  int32_t state_checkpoints() const override { return inner_->state_checkpoints(); }
  Pooling pooling() const override { return inner_->pooling(); }
  bool causal() const override { return inner_->causal(); }
  int32_t output_width() const override { return inner_->output_width(); }
  bool rank_reads_last() const override { return inner_->rank_reads_last(); }
  void rank(std::vector<float>& pooled) override { inner_->rank(pooled); }
  void copy_states(std::span<const StateCopy> copies) override { inner_->copy_states(copies); }
  void forward(const Batch& batch, std::vector<float>& logits) override;
  bool samples_rows() const override { return inner_->samples_rows(); }
  void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                       std::vector<SampledRow>& sampled) override;
  int experts_run() const override { return inner_->experts_run(); }
  ThreadPool* host_pool() override { return inner_->host_pool(); }

 private:
  std::unique_ptr<ModelRunner> inner_;
  FaultInjector& faults_;
  void before_forward(const Batch& batch);  // the faults a pass may meet

  int64_t slowed_step_ = -1;  // a step sleeps once, not once per retry
};

}  // namespace pagoda
