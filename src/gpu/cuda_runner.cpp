#include "gpu/cuda_runner.h"

#include <algorithm>

#include "kv/pool_size.h"
#include "model/kv_storage.h"
#include "util/error.h"

namespace pagoda::gpu {

namespace {
// The sampling lists' room before a step needs more (grown like the rest).
constexpr int32_t kFirstSampleEntries = 4096;
}  // namespace

CudaRunner::CudaRunner(std::shared_ptr<const Model> model, std::unique_ptr<Device> device,
                       const CudaRunnerOptions& options)
    : model_(std::move(model)), device_(std::move(device)), options_(options) {
  if (!model_ || !device_) fail<InvalidArgument>("a GPU runner needs a model and a device");
  const ModelConfig& cfg = model_->config();
  device_name_ = device_->name();
  if (const std::string why = device_->unsupported(cfg); !why.empty())
    fail<Unsupported>("{} cannot run this {} model: {}", device_name_, cfg.arch, why);
  const int32_t bs = options.block_size;
  if (bs <= 0) fail<InvalidArgument>("block size {}", bs);

  DeviceMemory start, after;
  check(device_->memory(start), "reading the device's memory");
  check(device_->load_weights(*model_), "loading the weights");
  const int32_t max_len = options.max_model_len > 0 ? options.max_model_len : cfg.n_ctx_train;
  // Layers with K/V of their own only: a recurrent layer keeps its state instead, and a layer that
  // shares another's K/V (gemma4) reads that one's.
  KvGroups groups = kv_groups_of(cfg, options.hybrid_kv_cache);
  reserved_ = {.max_tokens = std::max(1, options.max_batched_tokens),
               .max_seqs = std::max(1, options.max_num_seqs),
               .max_blocks_per_seq = std::max(1, (max_len + bs - 1) / bs),
               .max_logits = std::max(1, options.max_num_seqs),  // prompt logprobs grow it
               .max_sample_entries = kFirstSampleEntries,
               .kv_groups = groups.num_groups()};
  check(device_->reserve_workspace(reserved_), "reserving the step workspace");
  if (cfg.n_recurrent_layers() > 0) {
    // As on the CPU (kv/pool_size.h), out of what the share leaves after the workspace.
    DeviceMemory now;
    check(device_->memory(now), "reading the device's memory");
    const int64_t share = int64_t(options.gpu_memory_utilization * double(now.total_bytes));
    const StatePoolSize size =
        size_state_pool({.state_slots = options.state_slots,
                         .state_checkpoints = options.state_checkpoints,
                         .max_num_seqs = std::max(1, options.max_num_seqs),
                         .state_bytes = cfg.state_bytes(),
                         .mem_left_bytes = std::max<int64_t>(0, share - (now.total_bytes - now.free_bytes)),
                         .mem_left_why = fmt::format("left of the GPU's --gpu-memory-utilization {} share",
                                                     options.gpu_memory_utilization)});
    states_ = {.num_slots = size.num_slots, .num_checkpoints = size.num_checkpoints};
    state_summary_ = size.summary;
    check(device_->allocate_states(states_), "allocating the recurrent state");
  }
  check(device_->memory(after), "reading the device's memory");

  pool_ = {.block_size = bs, .slot_dims = kv_slot_dims(cfg, groups), .type = options.kv_type};
  const int64_t context_pages = groups.pages_at_rest(max_len, bs);
  pool_.groups = std::move(groups);
  plan_ = plan_gpu_memory({.total_bytes = start.total_bytes,
                           .free_at_start = start.free_bytes,
                           .free_after_setup = after.free_bytes,
                           .utilization = options.gpu_memory_utilization,
                           .block_bytes = pool_.block_bytes(),
                           .block_size = bs,
                           .cache_tokens = options.kv_cache_tokens,
                           .max_model_len = max_len,
                           .num_groups = pool_.groups.num_groups(),
                           .context_pages = context_pages});
  pool_.num_blocks = plan_.num_blocks;
  check(device_->allocate_kv(pool_), "allocating the KV pool");
}

void CudaRunner::check_not_lost() const {
  if (!lost_.empty()) fail<DeviceLost>("{} (earlier)", lost_);
}

void CudaRunner::check(const DeviceStatus& s, std::string_view what) {
  if (s.ok()) return;
  try {
    raise_device_error(s, what);
  } catch (const DeviceLost& e) {
    lost_ = e.what();
    throw;
  }
}

void CudaRunner::copy_blocks(std::span<const BlockCopy> copies) {
  if (copies.empty()) return;
  check_not_lost();
  for (const auto& c : copies)  // an id outside the pool would write out of bounds on the device
    if (c.src < 0 || c.src >= pool_.num_blocks || c.dst < 0 || c.dst >= pool_.num_blocks)
      fail<InvalidArgument>("a block copy {} -> {} outside the pool of {}", c.src, c.dst, pool_.num_blocks);
  check(device_->copy_blocks(copies), "copying KV blocks");
}

void CudaRunner::copy_states(std::span<const StateCopy> copies) {
  if (copies.empty()) return;
  check_not_lost();
  for (const auto& c : copies)  // as copy_blocks: an id outside the pool would write out of bounds
    if (c.src < 0 || c.src >= states_.num_buffers() || c.dst < 0 || c.dst >= states_.num_buffers() || c.src == c.dst)
      fail<InvalidArgument>("a state copy {} -> {} outside the pool of {} buffers", c.src, c.dst,
                            states_.num_buffers());
  check(device_->copy_states(copies), "copying recurrent state");
}

void CudaRunner::forward(const Batch& batch, std::vector<float>& logits) {
  std::vector<SampledRow> none;
  forward_sampled(batch, logits, {}, none);
}

void CudaRunner::forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                                 std::vector<SampledRow>& sampled) {
  check_not_lost();
  if (batch.num_groups != pool_.groups.num_groups())
    fail<InvalidArgument>("a batch of {} KV groups for a pool of {}", batch.num_groups, pool_.groups.num_groups());
  const StepUpload upload =
      StepUpload::pack(batch, pool_.block_size, pool_.num_blocks, sampling, vocab_size(), states_.num_buffers());
  upload.check_attended_blocks(pool_.groups.windows);  // a read of kNoBlock would be out of bounds
  const StepLimits need{upload.num_tokens(),
                        upload.num_seqs(),
                        upload.table_width(),
                        upload.num_logits(),
                        int32_t(upload.adjusts().size() + upload.penalties().size()),
                        upload.num_groups()};
  if (!reserved_.covers(need)) {
    // Before the step's first launch: an out-of-memory here halves the step, nothing half-ran.
    const StepLimits grown = reserved_.widened(need);
    check(device_->reserve_workspace(grown), "growing the step workspace");
    reserved_ = grown;
  }
  logits.resize(size_t(upload.num_logits() - upload.num_sampled()) * size_t(vocab_size()));
  sampled.resize(size_t(upload.num_sampled()));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<Device::Deadline::duration>(
                                                               std::chrono::duration<double>(options_.step_deadline_s));
  const DeviceStatus launched = device_->launch_step(upload);
  const DeviceStatus done = launched.ok() ? device_->finish_step(deadline, logits, sampled) : launched;
  check(done, "the forward pass");  // the engine's log names the step
}

}  // namespace pagoda::gpu
