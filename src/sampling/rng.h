// The sampler's random numbers: xoshiro256** seeded through splitmix64.
// Ours rather than std:: distributions, whose output is implementation-
// defined, so a seed gives the same tokens on every platform and build. An Rng
// is a plain value: the engine keeps one per request and copies or stores it
// across preemption, and the stream continues exactly where it was.
#pragma once

#include <array>
#include <cstdint>

namespace pagoda {

// One step of splitmix64: advances `state`, returns the next output.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  // The state is four splitmix64 outputs from `seed` (never all zero).
  explicit Rng(uint64_t seed);
  // Resumes a stream from state(); throws InvalidArgument for the all-zero state.
  static Rng from_state(const State& state);

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1): the top 53 bits, so every value is an exact double.
  double uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

  const State& state() const { return s_; }
  friend bool operator==(const Rng&, const Rng&) = default;

 private:
  Rng() = default;
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
};

// A seed for requests that give none: std::random_device mixed with the clock
// and a counter, since random_device alone may be deterministic on some platforms.
uint64_t random_seed();

}  // namespace pagoda
