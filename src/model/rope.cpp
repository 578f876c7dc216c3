#include "model/rope.h"

#include <cmath>

namespace pagoda {

Rope::Rope(const ModelConfig& cfg, std::span<const float> freq_factors)
    : layout_(cfg.rope_layout), head_dim_(cfg.head_dim), rope_dims_(cfg.rope_dims) {
  const int pairs = rope_dims_ / 2;
  inv_freq_.resize(size_t(pairs));
  for (int i = 0; i < pairs; ++i) {
    double f = std::pow(double(cfg.rope_freq_base), -2.0 * i / rope_dims_);
    if (!freq_factors.empty()) f /= freq_factors[size_t(i)];
    inv_freq_[size_t(i)] = f / cfg.rope_linear_factor;
  }
}

void Rope::apply(float* x, int n_heads, int pos) const {
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
