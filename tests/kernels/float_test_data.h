// Test data shared by the float kernels' tests (float_matmul_test.cpp,
// attention_test.cpp, activations_test.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "util/half.h"

namespace pagoda {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return h;
}

inline uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline std::vector<size_t> lengths() {
  std::vector<size_t> n;
  for (size_t i = 1; i <= 70; ++i) n.push_back(i);
  for (size_t i : {2048, 5632 + 3}) n.push_back(i);
  return n;
}

}  // namespace pagoda
