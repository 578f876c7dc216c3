// Fault injection, off by default: makes the engine fail a forward pass, run
// out of memory, fail a block allocation, slow a step or its model load, or
// carry a request no forward pass can run, so tests (and operators, with
// --inject-faults) can reproduce production failures on a CPU.
//
// SPEC is a comma-separated list of name=value:
//   forward=P   a forward pass throws with probability P (transient: drawn per
//               pass, so a retry usually passes)
//   poison=P    each request is poisoned with probability P, drawn once from
//               the seed and its id; every forward pass that carries a
//               poisoned request fails (deterministic: only isolation helps)
//   oom=P       a step's forward pass fails for lack of memory (ResourceExhausted)
//   alloc=P     a block allocation fails as if the pool were empty
//   slow=P      a step sleeps slow_ms milliseconds first (slow_ms=MS, default 100)
//   at_step=N   every forward pass of step N fails, retries too (deterministic tests)
//   lost_at_step=N  the forward pass of step N loses the device (DeviceLost: a
//               sticky GPU fault; no retry, every request ends, serve exits 4)
//   load_ms=MS  loading the model first waits MS milliseconds (a server says 503 meanwhile)
//   gpu_trap_at_pass=N, gpu_hang_at_pass=N, gpu_oom_at_pass=N  real faults on a
//               CUDA device at its Nth forward pass (retries count): a kernel
//               that traps (sticky: the device is lost), one that never ends
//               (the step deadline loses it), an allocation that finds the
//               device's memory taken (out of memory: the step is halved)
//   seed=S      the random stream of the faults (default 0)
// Example: --inject-faults forward=0.05,oom=0.02,poison=0.01,seed=7
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sampling/rng.h"

namespace pagoda {

struct FaultSpec {
  double forward = 0, oom = 0, alloc = 0, slow = 0, poison = 0;
  int64_t slow_ms = 100;
  int64_t at_step = -1;
  int64_t lost_at_step = -1;
  int64_t load_ms = 0;
  int64_t gpu_trap_at_pass = -1, gpu_hang_at_pass = -1, gpu_oom_at_pass = -1;  // src/cuda/cuda_device.h
  uint64_t seed = 0;

  static FaultSpec parse(std::string_view spec);  // InvalidArgument naming the bad item
  bool any() const {
    return forward > 0 || oom > 0 || alloc > 0 || slow > 0 || poison > 0 || at_step >= 0 || lost_at_step >= 0 ||
           load_ms > 0 || gpu_trap_at_pass > 0 || gpu_hang_at_pass > 0 || gpu_oom_at_pass > 0;
  }
  std::string describe() const;
};

struct FaultCounts {
  int64_t forward = 0, oom = 0, alloc = 0, slow = 0;
  int64_t poisoned = 0;  // requests poisoned when added (not the passes they failed)
};

// Draws the faults; engine thread only.
class FaultInjector {
 public:
  explicit FaultInjector(const FaultSpec& spec = {}) : spec_(spec), rng_(spec.seed) {}

  // Throws the injected failure for a forward pass of `step`, if any;
  // `carries_poisoned`: the pass's batch holds a poisoned request.
  void before_forward(int64_t step, bool carries_poisoned = false);
  // Whether request `id` is poisoned: a pure function of the seed and the id.
  bool is_poisoned(uint64_t request_id) const;
  // is_poisoned(), counting the request; call once per request added.
  bool poison(uint64_t request_id);
  bool fail_alloc();
  int64_t slow_ms();  // 0 = no delay this step

  const FaultCounts& counts() const { return counts_; }
  const FaultSpec& spec() const { return spec_; }

 private:
  bool draw(double p) { return p > 0 && rng_.uniform() < p; }
  FaultSpec spec_;
  Rng rng_;
  FaultCounts counts_;
};

}  // namespace pagoda
