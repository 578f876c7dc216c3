// Rng seeding and the nondeterministic seed source.
#include "sampling/rng.h"

#include <atomic>
#include <chrono>
#include <random>

#include "util/error.h"

namespace pagoda {

Rng::Rng(uint64_t seed) {
  // splitmix64 outputs are a bijection of distinct counter values, so four
  // consecutive ones are never all zero.
  for (auto& word : s_) word = splitmix64(seed);
}

Rng Rng::from_state(const State& state) {
  if (state == State{}) fail<InvalidArgument>("xoshiro256** state must not be all zero");
  Rng rng;
  rng.s_ = state;
  return rng;
}

uint64_t random_seed() {
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  uint64_t mix = (uint64_t(device()) << 32) ^ device();
  mix ^= uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  mix += counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull;
  return splitmix64(mix);
}

}  // namespace pagoda
