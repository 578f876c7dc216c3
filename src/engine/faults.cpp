#include "engine/faults.h"

#include <charconv>
#include <string>

#include "util/error.h"

namespace pagoda {
namespace {

double probability(std::string_view name, std::string_view v) {
  double p = 0;
  try {
    size_t used = 0;
    p = std::stod(std::string(v), &used);
    if (used != v.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail<InvalidArgument>("--inject-faults: {}={} is not a number", name, v);
  }
  if (!(p >= 0 && p <= 1))
    fail<InvalidArgument>("--inject-faults: {} must be a probability in [0, 1], got {}", name, v);
  return p;
}

int64_t integer(std::string_view name, std::string_view v) {
  int64_t x = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < 0)
    fail<InvalidArgument>("--inject-faults: {}={} is not a non-negative integer", name, v);
  return x;
}

}  // namespace

FaultSpec FaultSpec::parse(std::string_view spec) {
  FaultSpec f;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail<InvalidArgument>("--inject-faults: '{}' is not name=value", item);
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "forward")
      f.forward = probability(name, value);
    else if (name == "oom")
      f.oom = probability(name, value);
    else if (name == "alloc")
      f.alloc = probability(name, value);
    else if (name == "slow")
      f.slow = probability(name, value);
    else if (name == "poison")
      f.poison = probability(name, value);
    else if (name == "slow_ms")
      f.slow_ms = integer(name, value);
    else if (name == "at_step")
      f.at_step = integer(name, value);
    else if (name == "lost_at_step")
      f.lost_at_step = integer(name, value);
    else if (name == "load_ms")
      f.load_ms = integer(name, value);
    else if (name == "gpu_trap_at_pass")
      f.gpu_trap_at_pass = integer(name, value);
    else if (name == "gpu_hang_at_pass")
      f.gpu_hang_at_pass = integer(name, value);
    else if (name == "gpu_oom_at_pass")
      f.gpu_oom_at_pass = integer(name, value);
    else if (name == "seed")
      f.seed = uint64_t(integer(name, value));
    else
      fail<InvalidArgument>(
          "--inject-faults: unknown fault '{}' (forward, oom, alloc, slow, slow_ms, poison, at_step, lost_at_step, "
          "load_ms, gpu_trap_at_pass, gpu_hang_at_pass, gpu_oom_at_pass, seed)",
          name);
  }
  return f;
}

std::string FaultSpec::describe() const {
  return fmt::format(
      "forward={} oom={} alloc={} slow={} slow_ms={} poison={} at_step={} lost_at_step={} load_ms={} "
      "gpu_trap_at_pass={} gpu_hang_at_pass={} gpu_oom_at_pass={} seed={}",
      forward, oom, alloc, slow, slow_ms, poison, at_step, lost_at_step, load_ms, gpu_trap_at_pass, gpu_hang_at_pass,
      gpu_oom_at_pass, seed);
}

void FaultInjector::before_forward(int64_t step, bool carries_poisoned) {
  if (step == spec_.lost_at_step) fail<DeviceLost>("injected fault: an illegal memory access (step {})", step);
  if (step == spec_.at_step) {
    ++counts_.forward;
    fail("injected fault: forward pass of step {} failed", step);
  }
  if (carries_poisoned) fail("injected fault: poisoned request in the batch");
  if (draw(spec_.oom)) {
    ++counts_.oom;
    fail<ResourceExhausted>("injected fault: out of memory in the forward pass");
  }
  if (draw(spec_.forward)) {
    ++counts_.forward;
    fail("injected fault: forward pass failed");
  }
}

bool FaultInjector::is_poisoned(uint64_t request_id) const {
  if (!(spec_.poison > 0)) return false;
  // Its own stream per request, so whether a request is poisoned does not
  // depend on how many other faults were drawn before it arrived.
  uint64_t state = spec_.seed ^ (request_id * 0xd1b54a32d192ed03ull);
  const double u = double(splitmix64(state) >> 11) * 0x1.0p-53;
  return u < spec_.poison;
}

bool FaultInjector::poison(uint64_t request_id) {
  const bool poisoned = is_poisoned(request_id);
  counts_.poisoned += poisoned;
  return poisoned;
}

bool FaultInjector::fail_alloc() {
  if (!draw(spec_.alloc)) return false;
  ++counts_.alloc;
  return true;
}

int64_t FaultInjector::slow_ms() {
  if (!draw(spec_.slow)) return 0;
  ++counts_.slow;
  return spec_.slow_ms;
}

}  // namespace pagoda
