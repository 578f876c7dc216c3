#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace pagoda {

double Rope::yarn_corr_dim(int dims, int orig_ctx, double rotations, double base) {
  return dims * std::log(orig_ctx / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

Rope::YarnRamp Rope::yarn_ramp(const RopeSpec& rope, int dims) {
  if (rope.scaling != RopeScaling::Yarn) return {};
  // ggml floors and ceils the correction dims into [0, dims - 1].
  return {
      std::max(0.0, std::floor(yarn_corr_dim(dims, rope.yarn_orig_ctx, rope.yarn_beta_fast, rope.base))),
      std::min(double(dims - 1), std::ceil(yarn_corr_dim(dims, rope.yarn_orig_ctx, rope.yarn_beta_slow, rope.base)))};
}

float Rope::mscale(const RopeSpec& rope) {
  // YaRN's magnitude: 1 + 0.1 ln(factor), or with a log multiplier the ratio
  // of that at 1 and at the multiplier (as Hugging Face and llama.cpp compute it).
  auto magnitude = [&](double m) { return rope.factor <= 1 ? 1.0 : 0.1 * m * std::log(rope.factor) + 1.0; };
  double m = 1.0;
  if (rope.scaling == RopeScaling::Yarn)
    m = rope.yarn_log_mul != 0 ? magnitude(1.0) / magnitude(rope.yarn_log_mul) : magnitude(1.0);
  return float(m * rope.attn_factor);
}

Rope::Rope(const RopeSpec& rope, int head_dim, std::span<const float> freq_factors)
    : enabled_(rope.enabled), layout_(rope.layout), head_dim_(head_dim), rope_dims_(rope.dims) {
  const int pairs = rope_dims_ / 2;
  const YarnRamp ramp = yarn_ramp(rope, rope_dims_);
  inv_freq_.resize(size_t(pairs));
  for (int i = 0; i < pairs; ++i) {
    double f = std::pow(double(rope.base), -2.0 * i / rope_dims_);
    if (rope.freq_factors && !freq_factors.empty()) f /= freq_factors[size_t(i)];
    if (rope.scaling == RopeScaling::Linear) f /= rope.factor;
    if (rope.scaling == RopeScaling::Yarn) {
      const double extrapolate = 1 - std::clamp((i - ramp.low) / std::max(0.001, ramp.high - ramp.low), 0.0, 1.0);
      f *= (1 - extrapolate) / rope.factor + extrapolate;
    }
    inv_freq_[size_t(i)] = f;
  }
  mscale_ = mscale(rope);
}

void Rope::apply(float* x, int n_heads, int pos) const {
  if (!enabled_) return;
  const int pairs = rope_dims_ / 2;
  // The two elements of pair i: adjacent, or half the rotated span apart.
  const int stride = layout_ == RopeLayout::NeoX ? 1 : 2;
  const int offset = layout_ == RopeLayout::NeoX ? pairs : 1;
  for (int i = 0; i < pairs; ++i) {
    const double theta = pos * inv_freq_[size_t(i)];
    const float c = float(std::cos(theta)) * mscale_, s = float(std::sin(theta)) * mscale_;
    for (int h = 0; h < n_heads; ++h) {
      float* p = x + h * head_dim_ + stride * i;
      const float a = p[0], b = p[offset];
      p[0] = a * c - b * s;
      p[offset] = a * s + b * c;
    }
  }
}

}  // namespace pagoda
