// What the engine needs from a model: run a batch over the paged KV storage
// and copy blocks for copy-on-write. The real runner wraps a LlamaModel;
// tests of the engine drive it with a deterministic fake.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/types.h"
#include "model/batch.h"
#include "model/kv_storage.h"
#include "model/llama.h"
#include "util/thread_pool.h"

namespace pagoda {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t context_length() const = 0;
  // Duplicates blocks' K/V (copy on write), before the forward pass.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;
  // Runs the batch; logits: one row of vocab_size() per token with logits set.
  // Throws on failure; ResourceExhausted means "out of memory, try less".
  virtual void forward(const Batch& batch, std::vector<float>& logits) = 0;
};

class LlamaRunner : public ModelRunner {
 public:
  LlamaRunner(std::shared_ptr<LlamaModel> model, int num_blocks, int block_size, KvType kv_type, int threads);

  int32_t vocab_size() const override { return model_->config().n_vocab; }
  int32_t context_length() const override { return model_->config().n_ctx_train; }
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void forward(const Batch& batch, std::vector<float>& logits) override;

  const KvStorage& storage() const { return kv_; }

 private:
  std::shared_ptr<LlamaModel> model_;
  KvStorage kv_;
  ThreadPool pool_;
};

}  // namespace pagoda
