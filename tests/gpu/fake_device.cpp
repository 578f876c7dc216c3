#include "fake_device.h"

#include <algorithm>
#include <thread>

#include "device/device_failure.h"
#include "model/weight_mover.h"

namespace pagoda::gpu::testing {
namespace {

constexpr int kCudaErrorMemoryAllocation = 2;
constexpr int kCudaErrorLaunchOutOfResources = 701;
constexpr int kCudaErrorNotReady = 600;  // asked for a result no step was launched for

}  // namespace

FakeDevice::FakeDevice(std::shared_ptr<Model> model, int64_t total_bytes)
    : model_(std::move(model)), total_(total_bytes) {}

void FakeDevice::fail_at(Call call, int nth, DeviceStatus status) {
  faults_.push_back({call, calls_[int(call)] + nth, status});
}

void FakeDevice::fail_at_random(double oom, double recoverable, uint32_t seed) {
  random_oom_ = oom;
  random_recoverable_ = recoverable;
  rng_.seed(seed);
}

void FakeDevice::hang_at_launch(int nth) { hang_at_ = calls_[int(Call::kLaunch)] + nth; }

DeviceStatus FakeDevice::answer(Call call) {
  const int n = ++calls_[int(call)];
  if (!sticky_.ok()) return sticky_;
  if (call == Call::kLaunch && (random_oom_ > 0 || random_recoverable_ > 0)) {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < random_oom_) return DeviceStatus::cuda(kCudaErrorMemoryAllocation, "cudaMallocAsync");
    if (r < random_oom_ + random_recoverable_)
      return DeviceStatus::cuda(kCudaErrorLaunchOutOfResources, "cudaLaunchKernel");
  }
  for (const Fault& f : faults_) {
    if (f.call != call || f.at != n) continue;
    if (f.status.api == DeviceStatus::Api::kCuda &&
        device::classify_cuda_error(f.status.code) == device::DeviceFailure::kDeviceLost)
      sticky_ = f.status;  // as CUDA: the context is gone, every call says so
    return f.status;
  }
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::take(int64_t bytes, const char* call) const {
  const int64_t free = total_ - held_by_others_ - used_bytes();
  return bytes <= free ? DeviceStatus::success() : DeviceStatus::cuda(kCudaErrorMemoryAllocation, call);
}

DeviceStatus FakeDevice::memory(DeviceMemory& out) {
  if (!sticky_.ok()) return sticky_;
  out = {.free_bytes = std::max<int64_t>(0, total_ - held_by_others_ - used_bytes()), .total_bytes = total_};
  return DeviceStatus::success();
}

std::string FakeDevice::unsupported(const ModelConfig&) const { return ""; }

DeviceStatus FakeDevice::load_weights(const Model& model) {
  if (auto s = answer(Call::kLoadWeights); !s.ok()) return s;
  const int64_t bytes = int64_t(WeightMover::arena_bytes(model.weights()));
  if (auto s = take(bytes, "cudaMalloc"); !s.ok()) return s;
  weights_ = bytes;
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::reserve_workspace(const StepLimits& limits) {
  if (auto s = answer(Call::kReserveWorkspace); !s.ok()) return s;
  // Activations of the widest layer, the upload and the logits rows, as a real device sizes them.
  const ModelConfig& c = model_->config();
  const int64_t per_token = 4 * (4 * int64_t(c.n_embd) + c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff + 8);
  const int64_t bytes = per_token * limits.max_tokens +
                        4 * int64_t(limits.max_seqs) * (int64_t(limits.kv_groups) * limits.max_blocks_per_seq + 1) +
                        8 * int64_t(limits.max_logits) * c.n_vocab +  // on the device and pinned on the host
                        8 * int64_t(limits.max_logits) * c.n_vocab +  // the sampling scratch
                        8 * int64_t(limits.max_sample_entries);
  // The new buffers come before the old go: a refusal keeps the old.
  if (auto s = take(bytes, "cudaMalloc"); !s.ok()) return s;
  workspace_ = bytes;
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::allocate_states(const StatePoolShape& shape) {
  if (auto s = answer(Call::kAllocateStates); !s.ok()) return s;
  const int64_t bytes = int64_t(shape.num_buffers()) * model_->config().state_bytes();
  if (auto s = take(bytes, "cudaMalloc"); !s.ok()) return s;
  states_ = std::make_unique<StateStorage>(model_->config(), shape.num_slots, shape.num_checkpoints);
  state_bytes_ = bytes;
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::copy_states(std::span<const StateCopy> copies) {
  if (auto s = answer(Call::kCopyStates); !s.ok()) return s;
  for (const auto& c : copies) states_->copy(c.src, c.dst);
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::allocate_kv(const KvPoolShape& shape) {
  if (auto s = answer(Call::kAllocateKv); !s.ok()) return s;
  if (auto s = take(shape.bytes(), "cudaMalloc"); !s.ok()) return s;
  if (shape.slot_dims != kv_slot_dims(model_->config(), shape.groups))  // as a real device checks
    fail<InvalidArgument>("a KV pool's slots do not fit the model");
  kv_ = std::make_unique<KvStorage>(model_->config(), shape.groups, shape.num_blocks, shape.block_size, shape.type);
  kv_bytes_ = shape.bytes();
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::copy_blocks(std::span<const BlockCopy> copies) {
  if (auto s = answer(Call::kCopyBlocks); !s.ok()) return s;
  for (const auto& c : copies) kv_->copy_block(c.src, c.dst);
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::launch_step(const StepUpload& upload) {
  if (auto s = answer(Call::kLaunch); !s.ok()) return s;
  hung_ = calls_[int(Call::kLaunch)] == hang_at_;
  ++launches_;
  // Read back from the words alone, as the kernels will.
  std::vector<std::vector<int32_t>> tables;
  const Batch batch = upload.unpack(tables);
  std::vector<float> rows;  // in batch order
  model_->forward(batch, *kv_, pool_, rows, states_.get());
  // In logit_rows() order, as the device computes them: the sampled ones
  // first (sampled by the kernels' reference), then those that come back.
  const size_t V = size_t(model_->config().n_vocab);
  std::vector<int32_t> in_batch_order(upload.logit_rows().begin(), upload.logit_rows().end());
  std::sort(in_batch_order.begin(), in_batch_order.end());
  auto row = [&](int32_t j) {
    const int32_t token = upload.logit_rows()[size_t(j)];
    const size_t r =
        size_t(std::lower_bound(in_batch_order.begin(), in_batch_order.end(), token) - in_batch_order.begin());
    return std::span<const float>(rows).subspan(r * V, V);
  };
  pending_sampled_.clear();
  for (int32_t j = 0; j < upload.num_sampled(); ++j) {
    const RowSampling& r = upload.sampling_rows()[size_t(j)];
    pending_sampled_.push_back(
        sample_row_reference(row(j), r, upload.adjusts().subspan(size_t(r.adjust_begin), size_t(r.adjust_count)),
                             upload.penalties().subspan(size_t(r.penalty_begin), size_t(r.penalty_count))));
  }
  pending_.clear();
  for (int32_t j = upload.num_sampled(); j < upload.num_logits(); ++j) {
    const auto r = row(j);
    pending_.insert(pending_.end(), r.begin(), r.end());
  }
  launched_ = true;
  return DeviceStatus::success();
}

DeviceStatus FakeDevice::finish_step(Deadline deadline, std::span<float> logits, std::span<SampledRow> sampled) {
  if (!sticky_.ok()) return sticky_;
  if (!launched_) return DeviceStatus::cuda(kCudaErrorNotReady, "cudaEventSynchronize");
  if (hung_) {
    std::this_thread::sleep_until(deadline);
    return DeviceStatus::deadline("the step's kernels");
  }
  launched_ = false;
  if (logits.size() != pending_.size() || sampled.size() != pending_sampled_.size())
    return DeviceStatus::cuda(1, "cudaMemcpyAsync");  // cudaErrorInvalidValue
  std::copy(pending_.begin(), pending_.end(), logits.begin());
  std::copy(pending_sampled_.begin(), pending_sampled_.end(), sampled.begin());
  rows_sampled_ += int(sampled.size());
  return DeviceStatus::success();
}

}  // namespace pagoda::gpu::testing
