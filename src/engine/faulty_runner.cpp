#include "engine/faulty_runner.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace pagoda {

void FaultyRunner::before_forward(const Batch& batch) {
  if (batch.step != slowed_step_) {
    slowed_step_ = batch.step;
    if (const int64_t ms = faults_.slow_ms(); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  const bool poisoned =
      std::any_of(batch.requests.begin(), batch.requests.end(), [&](uint64_t id) { return faults_.is_poisoned(id); });
  faults_.before_forward(batch.step, poisoned);
}

void FaultyRunner::forward(const Batch& batch, std::vector<float>& logits) {
  before_forward(batch);
  inner_->forward(batch, logits);
}

void FaultyRunner::forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                                   std::vector<SampledRow>& sampled) {
  before_forward(batch);
  inner_->forward_sampled(batch, logits, sampling, sampled);
}

}  // namespace pagoda
