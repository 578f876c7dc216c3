// What CudaRunner needs from a GPU: memory figures, the weights, a paged KV
// pool, a step workspace, and a step launched from one packed upload and
// waited for with a deadline. Every call answers with the device API's own
// code, so the one place that decides what a failure means is
// raise_device_error() (device/device_failure.h's table); no call blocks
// without a deadline and none aborts. The CUDA build implements it on a real
// device; tests implement it with the CPU model (tests/gpu/fake_device.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/step_upload.h"
#include "kv/kv_groups.h"
#include "kv/types.h"
#include "model/model.h"

namespace pagoda::gpu {

// One device call's answer: success, or the code of the API that failed.
struct DeviceStatus {
  enum class Api {
    kCuda,      // code: a cudaError_t
    kCublas,    // code: a cublasStatus_t
    kDeadline,  // a wait ran out: the work did not finish in time (code unused)
  };
  Api api = Api::kCuda;
  int code = 0;
  const char* call = "";  // what failed, for the message: "cudaMalloc", "step"

  bool ok() const { return api != Api::kDeadline && code == 0; }
  static DeviceStatus success() { return {}; }
  static DeviceStatus cuda(int code, const char* call) { return {Api::kCuda, code, call}; }
  static DeviceStatus cublas(int code, const char* call) { return {Api::kCublas, code, call}; }
  static DeviceStatus deadline(const char* call) { return {Api::kDeadline, 0, call}; }
};

// Throws what a failed call means: ResourceExhausted (out of memory: the
// engine halves the step), Error (recoverable: bisect and retry) or
// DeviceLost (sticky, unknown, or past its deadline: every request ends).
// `what` says what the runner was doing ("step 12", "the KV pool"); nothing
// happens for a status that is ok().
void raise_device_error(const DeviceStatus& s, std::string_view what);

struct DeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

// The paged KV pool, laid out as the CPU's (model/kv_storage.h): a block is a
// page of one KV group's layers (kv/kv_groups.h; a sliding group gives back
// the pages behind its window), each layer at its slot; per slot, K and V of
// [num_blocks][block_size][slot_dims[slot]]. One group of every layer with
// K/V of its own: the plain paged cache.
struct KvPoolShape {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  KvGroups groups;
  std::vector<int> slot_dims;  // kv_slot_dims(cfg, groups)
  KvType type = KvType::F16;
  int64_t block_bytes() const {
    int64_t dims = 0;
    for (int d : slot_dims) dims += d;
    return 2 * dims * block_size * int64_t(kv_type_bytes(type));
  }
  int64_t bytes() const { return block_bytes() * num_blocks; }
};

// A hybrid model's recurrent state (kv/types.h): two buffers a slot, then
// the prefix cache's checkpoints, each buffer every recurrent layer's
// convolution inputs and matrices (ModelConfig::state_bytes()).
struct StatePoolShape {
  int32_t num_slots = 0;
  int32_t num_checkpoints = 0;
  int32_t num_buffers() const { return 2 * num_slots + num_checkpoints; }
};

// The most one step may bring; its buffers are reserved before the step's
// first launch, so a step never runs out of memory half-way.
struct StepLimits {
  int32_t max_tokens = 0;
  int32_t max_seqs = 0;
  int32_t max_blocks_per_seq = 0;  // a sequence's table, in one group
  int32_t max_logits = 0;          // logits rows: one a sequence, more with prompt logprobs
  int32_t max_sample_entries = 0;  // rows sampled on the device: their logit adjustments + penalty entries
  int32_t kv_groups = 1;           // a sequence's tables (KvPoolShape::groups)
  bool covers(const StepLimits& s) const {
    return s.max_tokens <= max_tokens && s.max_seqs <= max_seqs && s.max_blocks_per_seq <= max_blocks_per_seq &&
           s.max_logits <= max_logits && s.max_sample_entries <= max_sample_entries && s.kv_groups <= kv_groups;
  }
  StepLimits widened(const StepLimits& s) const {
    return {std::max(max_tokens, s.max_tokens),
            std::max(max_seqs, s.max_seqs),
            std::max(max_blocks_per_seq, s.max_blocks_per_seq),
            std::max(max_logits, s.max_logits),
            std::max(max_sample_entries, s.max_sample_entries),
            std::max(kv_groups, s.kv_groups)};
  }
};

class Device {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  virtual ~Device() = default;

  virtual std::string name() const = 0;  // "NVIDIA H200 (sm_90, 139.8 GiB)"
  virtual DeviceStatus memory(DeviceMemory& out) = 0;
  // Why this device cannot run the model (an architecture, a format, a
  // feature its kernels lack); empty when it can.
  virtual std::string unsupported(const ModelConfig& cfg) const = 0;

  // Once, in this order, before any step.
  virtual DeviceStatus load_weights(const Model& model) = 0;
  // Replaces the step buffers with ones for `limits` (also later, to grow
  // them); on failure the old ones stay.
  virtual DeviceStatus reserve_workspace(const StepLimits& limits) = 0;
  // A model with recurrent layers only, between the workspace and the KV pool.
  virtual DeviceStatus allocate_states(const StatePoolShape& shape) = 0;
  virtual DeviceStatus allocate_kv(const KvPoolShape& shape) = 0;

  // Duplicates blocks' K and V in every layer (copy on write).
  virtual DeviceStatus copy_blocks(std::span<const BlockCopy> copies) = 0;
  // Copies whole state buffers, every layer's (a fork, a checkpoint saved
  // or restored), ahead of the next step.
  virtual DeviceStatus copy_states(std::span<const StateCopy> copies) = 0;
  // Starts a step: one copy of the upload to the device, then its kernels;
  // returns without waiting for them.
  virtual DeviceStatus launch_step(const StepUpload& upload) = 0;
  // Waits until the launched step ends or `deadline` passes (then
  // DeviceStatus::deadline), and copies its results out: the rows it
  // sampled (the upload's first num_sampled(), sampling/row_sample.h), and
  // the logits of the others (num_logits() - num_sampled() rows of the
  // model's vocabulary, in logit_rows() order).
  virtual DeviceStatus finish_step(Deadline deadline, std::span<float> logits, std::span<SampledRow> sampled) = 0;
};

}  // namespace pagoda::gpu
