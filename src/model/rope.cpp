#include "model/rope.h"

#include <cmath>

namespace pagoda {

Rope::Rope(const RopeSpec& rope, int head_dim, std::span<const float> freq_factors)
    : enabled_(rope.enabled), layout_(rope.layout), head_dim_(head_dim), rope_dims_(rope.dims) {
  const int pairs = rope_dims_ / 2;
  inv_freq_.resize(size_t(pairs));
  for (int i = 0; i < pairs; ++i) {
    double f = std::pow(double(rope.base), -2.0 * i / rope_dims_);
    if (rope.freq_factors && !freq_factors.empty()) f /= freq_factors[size_t(i)];
    inv_freq_[size_t(i)] = f / rope.linear_factor;
  }
}

void Rope::apply(float* x, int n_heads, int pos) const {
  if (!enabled_) return;
  const int pairs = rope_dims_ / 2;
  // The two elements of pair i: adjacent, or half the rotated span apart.
  const int stride = layout_ == RopeLayout::NeoX ? 1 : 2;
  const int offset = layout_ == RopeLayout::NeoX ? pairs : 1;
  for (int i = 0; i < pairs; ++i) {
    const double theta = pos * inv_freq_[size_t(i)];
    const float c = float(std::cos(theta)), s = float(std::sin(theta));
    for (int h = 0; h < n_heads; ++h) {
      float* p = x + h * head_dim_ + stride * i;
      const float a = p[0], b = p[offset];
      p[0] = a * c - b * s;
      p[offset] = a * s + b * c;
    }
  }
}

}  // namespace pagoda
