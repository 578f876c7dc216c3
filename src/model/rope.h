// Rotary position embedding (RoPE) in the two layouts GGUF models use, with
// the angle adjustments files may ask for: per-pair frequency factors
// (Llama 3.1/3.2's rope_freqs.weight), linear position scaling and YaRN.
//
// Pair i (i < dims/2) of a head is rotated by pos * inv_freq[i], where
//   inv_freq[i] = base^(-2i / dims) / freq_factor[i] * s[i]
// and s[i] is 1 without scaling, 1/factor for linear scaling, and for YaRN
// a ramp from 1/factor (pairs below its low correction dim: slow, interpolated)
// to 1 (above its high one: fast, extrapolated). The pair is (x[2i], x[2i+1])
// for the interleaved layout (llama) and (x[i], x[i + dims/2]) for NeoX
// (qwen2). The rotated values are multiplied by mscale (YaRN's magnitude
// correction times rope.scaling.attn_factor; 1 for most models). Dimensions
// past dims are left alone.
#pragma once

#include <span>
#include <vector>

#include "model/config.h"

namespace pagoda {

class Rope {
 public:
  // freq_factors: rope_freqs.weight's rope.dims/2 positive factors (checked
  // at load), used where rope.freq_factors says so.
  Rope(const RopeSpec& rope, int head_dim, std::span<const float> freq_factors);

  // Rotates the n_heads heads of x (head_dim apart) for position pos; a
  // RoPE that is not enabled leaves them alone.
  void apply(float* x, int n_heads, int pos) const;

  // YaRN's correction dims for a rotation count: the pair index at which a
  // pair turns `rotations` times over the original context (ggml's formula).
  static double yarn_corr_dim(int dims, int orig_ctx, double rotations, double base);
  // YaRN's ramp over pair indices [low, high] for `dims` rotated dims: pair i's
  // frequency is multiplied by (1 - e) / factor + e, e = 1 - clamp((i - low) /
  // max(0.001, high - low), 0, 1). {0, 0} without YaRN.
  struct YarnRamp {
    double low = 0, high = 0;
  };
  static YarnRamp yarn_ramp(const RopeSpec& rope, int dims);
  // The rotated values' factor: YaRN's magnitude correction (1 without YaRN) times attn_factor.
  static float mscale(const RopeSpec& rope);

 private:
  bool enabled_;
  RopeLayout layout_;
  int head_dim_, rope_dims_;
  float mscale_ = 1.0f;
  std::vector<double> inv_freq_;  // per pair: the angle is pos * inv_freq_[i]
};

}  // namespace pagoda
