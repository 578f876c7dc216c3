// The GPU backend's host half: a ModelRunner over a Device (gpu/device.h).
// At construction the weights go to the device, the step workspace is
// reserved for the engine's largest step, a hybrid model's recurrent-state
// slots are sized as on the CPU (kv/pool_size.h), and the KV pool, in the
// CPU's KV groups (model/kv_storage.h), takes what --gpu-memory-utilization
// leaves (gpu/gpu_memory_plan.h). A step is packed
// into one upload (gpu/step_upload.h), launched, and waited for with a
// deadline; every failure becomes the engine's exception by the device's
// error table: out of memory -> ResourceExhausted (the engine halves the
// step), recoverable -> Error (bisect and retry), sticky or past the
// deadline -> DeviceLost (every request ends, the process exits for a
// restart). After a DeviceLost nothing runs on the device again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/model_runner.h"
#include "gpu/device.h"
#include "gpu/gpu_memory_plan.h"
#include "model/model.h"

namespace pagoda::gpu {

struct CudaRunnerOptions {
  double gpu_memory_utilization = 0.9;  // vLLM's flag: this process's share of the device
  int64_t kv_cache_tokens = 0;          // an explicit pool; 0: the share's rest
  int32_t block_size = 16;
  KvType kv_type = KvType::F16;
  // The engine's largest step (EngineConfig::sched): the workspace is sized
  // for it before the first launch.
  int32_t max_batched_tokens = 2048;
  int32_t max_num_seqs = 256;
  int32_t max_model_len = 0;  // 0: the model's training context
  // A step not finished by then is a hung device: DeviceLost.
  double step_deadline_s = 30;
  // A hybrid model's recurrent-state slots and checkpoints (kv/pool_size.h's
  // StatePoolOptions: 0 slots, one a sequence up to the share's default
  // part; -1 checkpoints, one a slot), from the share left after the workspace.
  int64_t state_slots = 0;
  int64_t state_checkpoints = -1;
  // Sliding-window layers in KV groups of their own that give back the pages
  // behind their windows (kv/kv_groups.h; false: --disable-hybrid-kv-cache-manager).
  bool hybrid_kv_cache = true;
};

class CudaRunner : public ModelRunner {
 public:
  // Unsupported when the device cannot run the model; ResourceExhausted when
  // its memory cannot hold the weights, the workspace and two KV blocks.
  CudaRunner(std::shared_ptr<const Model> model, std::unique_ptr<Device> device, const CudaRunnerOptions& options);

  int32_t num_blocks() const { return plan_.num_blocks; }
  std::vector<int32_t> kv_group_windows() const override { return pool_.groups.windows; }
  const GpuMemoryPlan& memory_plan() const { return plan_; }
  const std::string& device_name() const { return device_name_; }

  int32_t vocab_size() const override { return model_->config().n_vocab; }
  int32_t context_length() const override { return model_->config().n_ctx_train; }
  void copy_blocks(std::span<const BlockCopy> copies) override;
  int32_t state_slots() const override { return states_.num_slots; }
  int32_t state_checkpoints() const override { return states_.num_checkpoints; }
  void copy_states(std::span<const StateCopy> copies) override;
  const std::string& state_summary() const { return state_summary_; }  // empty without recurrent layers
  void forward(const Batch& batch, std::vector<float>& logits) override;
  bool samples_rows() const override { return true; }
  void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                       std::vector<SampledRow>& sampled) override;

 private:
  // Throws what a failed status means (raise_device_error); a DeviceLost is
  // remembered, so that every later call fails the same way at once.
  void check(const DeviceStatus& s, std::string_view what);
  void check_not_lost() const;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Device> device_;
  CudaRunnerOptions options_;
  std::string device_name_;
  KvPoolShape pool_;
  StatePoolShape states_;
  std::string state_summary_;
  StepLimits reserved_;  // what the workspace holds now
  GpuMemoryPlan plan_;
  std::string lost_;  // why the device was lost; empty while it works
};

}  // namespace pagoda::gpu
