// What the engine needs from a model backend: run a batch over the paged KV
// storage and copy blocks for copy-on-write. Nothing of a model's insides is
// here, so a backend (CpuRunner on the CPU today) plugs in beside the
// others without touching the engine; engine tests drive a deterministic fake.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/batch.h"
#include "kv/types.h"
#include "model/config.h"  // Pooling
#include "sampling/row_sample.h"
#include "util/error.h"

namespace pagoda {

class ThreadPool;

// The logits rows a backend samples itself (ModelRunner::samples_rows): only
// their ids and logprobs come back. row_of has one entry per logits row of
// the pass, in batch order: an index into `rows`, or -1 for a row whose
// logits come back as before. rows[i] points into adjusts and penalties.
struct StepSampling {
  std::vector<int32_t> row_of;
  std::vector<RowSampling> rows;
  std::vector<LogitAdjust> adjusts;
  std::vector<PenaltyEntry> penalties;
  bool empty() const { return rows.empty(); }
  void clear() {
    row_of.clear();
    rows.clear();
    adjusts.clear();
    penalties.clear();
  }
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t context_length() const = 0;
  // The window of each KV group its storage is laid out in (kv/kv_groups.h):
  // the engine's block manager keeps one table per group. {0}: one group of
  // every layer, full attention.
  virtual std::vector<int32_t> kv_group_windows() const { return {0}; }
  // Duplicates blocks' K/V (copy on write), before the forward pass.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;
  // Recurrent-state slots the backend's storage holds (two buffers each,
  // kv/types.h); 0 for a model without recurrent layers.
  virtual int32_t state_slots() const { return 0; }
  // State checkpoint buffers (kv/state_checkpoints.h), numbered after the
  // slots' buffers: a hybrid model's prefix caching; 0: none.
  virtual int32_t state_checkpoints() const { return 0; }
  // Copies state buffers (a fork, a checkpoint saved or restored).
  virtual void copy_states(std::span<const StateCopy> copies) {
    if (!copies.empty()) fail<InvalidArgument>("this model keeps no recurrent state to copy");
  }
  // An embedding model's pooling; none: a generating model.
  virtual Pooling pooling() const { return Pooling::none; }
  // A reranker (pooling rank): whether its pooling reads the last position
  // (else the first), and its classification head, whose scores replace the
  // pooled state.
  virtual bool rank_reads_last() const { return false; }
  virtual void rank(std::vector<float>& pooled) {
    fail<Unsupported>("this model has no classification head: it cannot rank ({} floats)", pooled.size());
  }
  // False: the model attends both ways (bert), so forward() needs each
  // sequence's whole input in one pass, from position 0.
  virtual bool causal() const { return true; }
  // The width of forward()'s rows: vocab_size() logits, or an embedding
  // model's hidden states, which the engine pools per sequence.
  virtual int32_t output_width() const { return vocab_size(); }
  // Runs the batch; logits: one row of output_width() per token with logits set.
  // Throws on failure; ResourceExhausted means "out of memory, try less".
  virtual void forward(const Batch& batch, std::vector<float>& logits) = 0;
  // Whether the backend samples rows itself (a GPU: the whole logits matrix
  // stays on the device). The engine then asks for it per row.
  virtual bool samples_rows() const { return false; }
  // forward(), with the rows `sampling` names sampled by the backend:
  // sampled[i] answers sampling.rows[i]; logits holds only the other rows,
  // in batch order. An empty `sampling` is forward().
  virtual void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                               std::vector<SampledRow>& sampled) {
    if (!sampling.empty()) fail<Unsupported>("this backend does not sample rows itself");
    sampled.clear();
    forward(batch, logits);
  }
  // The experts the last forward pass ran, summed over its layers (a mixture
  // of experts: how much of the model a step read); 0 for a dense model.
  virtual int experts_run() const { return 0; }
  // The backend's host threads, idle between passes: the engine borrows them
  // (from its own thread only) for per-sequence work such as grammar masks.
  // Null: none, that work runs on the engine thread.
  virtual ThreadPool* host_pool() { return nullptr; }
};

}  // namespace pagoda
