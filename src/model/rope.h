// Rotary position embedding (RoPE) in the two layouts GGUF models use, with
// the angle adjustments files may ask for: per-pair frequency factors
// (Llama 3.1/3.2's rope_freqs.weight) and linear position scaling.
//
// Pair i (i < rope_dims/2) of a head is rotated by
//   pos / linear_factor * base^(-2i / rope_dims) / freq_factor[i]
// where the pair is (x[2i], x[2i+1]) for the interleaved layout (llama) and
// (x[i], x[i + rope_dims/2]) for NeoX (qwen2). Dimensions past rope_dims are
// left alone.
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

 private:
  bool enabled_;
  RopeLayout layout_;
  int head_dim_, rope_dims_;
  std::vector<double> inv_freq_;  // per pair: the angle is pos * inv_freq_[i]
};

}  // namespace pagoda
