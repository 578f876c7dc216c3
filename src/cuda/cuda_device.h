// gpu::Device on a real NVIDIA GPU: the weights in their GGUF blocks, the
// paged KV pool (F16; pages of a KV group's layers, as model/kv_storage.h's),
// a step's buffers reserved ahead, one stream, and the forward pass
// (forward_pass.h: llama, mistral, qwen2, qwen3, qwen3moe, gpt-oss, gemma3,
// olmo2 and their like; docs/gpu.md lists the pieces) as launches of this
// folder's kernels. Anything else is refused by unsupported() before a byte
// moves. No CUDA type appears here, so the CLI
// includes it like any header.
#pragma once

#include <cstdint>
#include <memory>

#include "gpu/device.h"

namespace pagoda::cuda {

// Real faults for the device check, counted in step launches (1: the first):
// --inject-faults gpu_trap_at_step=N, gpu_hang_at_step=N, gpu_oom_at_step=N.
struct DeviceFaults {
  int64_t trap_at_launch = -1;  // a kernel traps after the step's: sticky, the device is lost
  int64_t hang_at_launch = -1;  // a kernel never ends: the step's deadline fires
  int64_t oom_at_launch = -1;   // the free memory is taken, a real allocation fails, then it is given back
};

class CudaDevice : public gpu::Device {
 public:
  // Unsupported, naming CUDA's error, where device `ordinal` cannot be used
  // (no device, no driver, a driver older than the runtime). `graphs`: run
  // pure-decode steps as CUDA graphs (gpu/graph_buckets.h); false: every
  // step eagerly (--enforce-eager).
  static std::unique_ptr<CudaDevice> open(int ordinal = 0, const DeviceFaults& faults = {}, bool graphs = true);
  ~CudaDevice() override;

  std::string name() const override;
  gpu::DeviceStatus memory(gpu::DeviceMemory& out) override;
  std::string unsupported(const ModelConfig& cfg) const override;
  // Unsupported for a weight type no kernel decodes or a bias the pass does
  // not add; InvalidArgument for weights packed into CPU row panels (load
  // the model mapped).
  gpu::DeviceStatus load_weights(const Model& model) override;
  gpu::DeviceStatus reserve_workspace(const gpu::StepLimits& limits) override;
  // Unsupported for an F32 pool: the kernels keep K and V in F16.
  gpu::DeviceStatus allocate_states(const gpu::StatePoolShape& shape) override;
  gpu::DeviceStatus allocate_kv(const gpu::KvPoolShape& shape) override;
  gpu::DeviceStatus copy_blocks(std::span<const BlockCopy> copies) override;
  gpu::DeviceStatus copy_states(std::span<const StateCopy> copies) override;
  gpu::DeviceStatus launch_step(const gpu::StepUpload& upload) override;
  gpu::DeviceStatus finish_step(Deadline deadline, std::span<float> logits, std::span<SampledRow> sampled) override;

  struct Impl;

 private:
  explicit CudaDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_;
};

}  // namespace pagoda::cuda
