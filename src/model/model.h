// A transformer of any architecture model/config.h describes (llama,
// qwen2/3, qwen3moe, gemma2/3, phi3, granite, smollm3, olmo2, glm4, gpt-oss,
// the qwen35 hybrids, and the bert encoder) and its forward pass over a batch of
// tokens, a paged KV cache and, for recurrent layers, per-sequence states.
//
// One forward call: embed every token; per layer, project all tokens at once
// (each weight matrix is read once per call), rotate Q/K by position, write
// K/V into each token's cache slot, then attend each token over its own
// sequence's past through the block table; finally project only the tokens
// whose logits are wanted. Mirrors llama2.c's run.c, batched and paged.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "kv/batch.h"
#include "model/config.h"
#include "model/delta_net.h"
#include "model/kv_storage.h"
#include "model/moe.h"
#include "model/ops.h"
#include "model/per_layer_inputs.h"
#include "model/rope.h"
#include "model/state_storage.h"
#include "model/weight_mover.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace pagoda {

class Model {
 public:
  // Reads the file into memory (or maps it, see Residency) and checks every
  // tensor. Throws FormatError / Unsupported.
  // progress: bytes read, then bytes repacked (util/progress.h).
  static std::unique_ptr<Model> load(const std::string& path, Residency residency = Residency::kInMemory,
                                     const LoadProgress& progress = {});
  explicit Model(std::shared_ptr<const GgufFile> file, const LoadProgress& progress = {});

  const ModelConfig& config() const { return cfg_; }
  const ModelWeights& weights() const { return w_; }
  const GgufFile& file() const { return *file_; }

  // For a model loaded mapped: moves its weights into memory (and row
  // panels) on a background thread while it serves (model/weight_mover.h);
  // each forward pass first adopts the matrices finished so far. False, and
  // nothing started, where the copy would not fit the memory available
  // (MemAvailable less 256 MiB): the model keeps serving from the map.
  bool move_into_memory(WeightMover::Options options);
  // The mover, while one exists (tests, progress); null otherwise.
  const WeightMover* mover() const { return mover_.get(); }

  // Runs the batch. `logits` receives num_logits() rows of output_width()
  // floats, in the order of the batch's tokens with logits set. Throws InvalidArgument for
  // a malformed batch (bad token id, position outside the block table, block
  // id outside the storage) before touching the cache. A model with recurrent
  // layers needs `states` and the batch's state buffers (kv/batch.h).
  void forward(const Batch& batch, KvStorage& kv, ThreadPool& pool, std::vector<float>& logits,
               StateStorage* states = nullptr);

  // An embedding model's output: forward's rows are the final hidden states
  // (normed where the model has an output norm; n_embd wide), which the
  // engine pools, instead of logits.
  void set_hidden_output(bool on) { hidden_output_ = on; }
  int output_width() const { return hidden_output_ ? cfg_.n_embd : cfg_.n_vocab; }

  // A reranker (pooling rank, model/rank_head.cpp): its classification head
  // over a pooled hidden state, the scores per label (qwen3's: softmax over
  // yes/no, the first the relevance). Unsupported without a head.
  bool has_rank_head() const { return w_.cls_out.data != nullptr; }
  std::vector<float> rank_scores(std::span<const float> pooled, ThreadPool& pool) const;
  // Where rank pooling reads: the last position (qwen3's rerankers) or the first (BERT's).
  bool rank_reads_last() const { return cfg_.arch == "qwen3" || cfg_.arch == "qwen3vl"; }

  // The experts the last forward pass ran, summed over its layers (0 for a dense model).
  int experts_run() const { return experts_run_; }
  // The smallest router margin (model/moe.h) of the last forward pass's layers; +inf for a dense model.
  float router_margin() const { return router_margin_; }

 private:
  void check(const Batch& batch, const KvStorage& kv, const StateStorage* states);
  void check_states(const Batch& batch, const StateStorage* states);
  // The attention sub-block of layer `layer`: xb_ = wo(attn(in)), in T x n_embd.
  void attention_block(const Batch& batch, int layer, const float* in, KvStorage& kv, ThreadPool& pool);
  void attention(const Batch& batch, int layer, const KvStorage& kv, ThreadPool& pool);
  void dense_ffn(const LayerWeights& lw, int n_ff, const float* in, int n_tokens, ThreadPool& pool);
  void experts_beside_mlp(const LayerWeights& lw, int layer, const float* in, int n_tokens, ThreadPool& pool);

  std::shared_ptr<const GgufFile> file_;
  ModelConfig cfg_;
  ModelWeights w_;
  std::vector<Rope> ropes_;  // per layer: layers may differ in base, scaling, or rotate not at all
  // Activations, reused across calls: x (residual), xb (normed), q, k, v,
  // att (attention output), hb/hb2 (FFN).
  AlignedFloats x_, xb_, q_, k_, v_, att_, hb_, hb2_;  // 64-byte aligned rows for the kernels
  AlignedFloats qg_, gate_;                   // attn_output_gate: the query-and-gate rows, then the gates (T x q_dim)
  DeltaNet delta_;                            // the recurrent layers' buffers
  std::vector<std::vector<int>> seq_tokens_;  // per sequence: its token indices, in position order
  std::vector<int> seq_last_;                 // per sequence: its last position in the batch (check())
  AlignedFloats pl_;                          // per-layer inputs: T x (n_layer x n_embd_per_layer)
  PerLayerBuffers plb_;                       // their branch's buffers
  MoeFfn moe_;                                // a mixture of experts' buffers
  AlignedFloats moe_out_;                     // its output, T x n_embd
  AlignedFloats moe_in_, router_in_;          // dense_beside: the experts' and the router's inputs, T x n_embd
  int experts_run_ = 0;
  float router_margin_ = INFINITY;
  std::unique_ptr<WeightMover> mover_;  // after w_: stops before the weights go
  bool moved_ = false;                  // every matrix adopted from mover_
  bool hidden_output_ = false;
};

}  // namespace pagoda
