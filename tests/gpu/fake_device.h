// A Device for the GPU runner's host-half tests: it computes with the CPU
// model, reading each step from its packed upload as a device would; its
// memory is a made-up size that allocations count against; and it fails
// as CUDA does, with CUDA's codes: a sticky code (device/device_failure.h's
// kDeviceLost) answers every later call too, and a hung step never ends.
#pragma once

#include <atomic>
#include <memory>
#include <random>
#include <vector>

#include "gpu/device.h"
#include "model/kv_storage.h"
#include "model/state_storage.h"
#include "util/thread_pool.h"

namespace pagoda::gpu::testing {

class FakeDevice : public Device {
 public:
  enum class Call { kLoadWeights, kReserveWorkspace, kAllocateKv, kCopyBlocks, kLaunch, kAllocateStates, kCopyStates };

  FakeDevice(std::shared_ptr<Model> model, int64_t total_bytes);

  // The nth call of `call` from now on (1: the next) answers `status`.
  void fail_at(Call call, int nth, DeviceStatus status);
  // Each launch fails at random: out of memory with probability `oom`, a
  // recoverable cudaErrorLaunchOutOfResources with `recoverable`.
  void fail_at_random(double oom, double recoverable, uint32_t seed);
  // The nth launch from now on never finishes: finish_step waits out its deadline.
  void hang_at_launch(int nth);
  // Another process takes (or, negative, gives back) device memory.
  void hold(int64_t bytes) { held_by_others_ += bytes; }

  int64_t used_bytes() const { return weights_ + workspace_ + kv_bytes_ + state_bytes_; }
  int launches() const { return launches_; }
  int rows_sampled() const { return rows_sampled_; }  // rows it sampled itself, over every step
  int reservations() const { return calls_[int(Call::kReserveWorkspace)]; }
  const KvStorage* kv() const { return kv_.get(); }
  const StateStorage* states() const { return states_.get(); }

  std::string name() const override { return "fake GPU"; }
  DeviceStatus memory(DeviceMemory& out) override;
  std::string unsupported(const ModelConfig& cfg) const override;
  DeviceStatus load_weights(const Model& model) override;
  DeviceStatus reserve_workspace(const StepLimits& limits) override;
  DeviceStatus allocate_states(const StatePoolShape& shape) override;
  DeviceStatus allocate_kv(const KvPoolShape& shape) override;
  DeviceStatus copy_blocks(std::span<const BlockCopy> copies) override;
  DeviceStatus copy_states(std::span<const StateCopy> copies) override;
  DeviceStatus launch_step(const StepUpload& upload) override;
  DeviceStatus finish_step(Deadline deadline, std::span<float> logits, std::span<SampledRow> sampled) override;

 private:
  struct Fault {
    Call call;
    int at;  // the call's count at which it fires
    DeviceStatus status;
  };
  // The fault due at this call (counting it), else the sticky error, else success.
  DeviceStatus answer(Call call);
  // cudaErrorMemoryAllocation unless `bytes` more fit.
  DeviceStatus take(int64_t bytes, const char* call) const;

  std::shared_ptr<Model> model_;
  ThreadPool pool_{1};
  int64_t total_, held_by_others_ = 0, weights_ = 0, workspace_ = 0, kv_bytes_ = 0, state_bytes_ = 0;
  std::unique_ptr<KvStorage> kv_;
  std::unique_ptr<StateStorage> states_;
  std::vector<Fault> faults_;
  int calls_[7] = {};
  std::atomic<int> launches_ = 0;  // read by tests while the engine thread runs
  int hang_at_ = -1;
  double random_oom_ = 0, random_recoverable_ = 0;
  std::mt19937 rng_;
  DeviceStatus sticky_;
  // The launched step: its logits rows, computed at launch; whether it hangs.
  std::vector<float> pending_;
  std::vector<SampledRow> pending_sampled_;
  std::atomic<int> rows_sampled_ = 0;
  bool launched_ = false, hung_ = false;
};

}  // namespace pagoda::gpu::testing
