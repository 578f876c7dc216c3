// The slow, obviously correct Llama forward pass the optimized one is tested
// against: weights decoded to F32 once, one token at a time, dense per-sequence
// K/V (no paging, no batching, no threads), double-precision accumulation.
// For weights whose matmul quantizes activations (has_quantized_dot)
// the activation row goes through that 8-bit format first (quantize, then
// decode), since that is what the kernel computes: weights x Q8 activations.
// What varies by architecture (Q/K/V biases, the RoPE layout, frequency
// factors, linear scaling) is read here from the file itself, not from the
// model's config and weights, so a loader that drops one is caught.
#pragma once

#include <optional>
#include <vector>

#include "model/model.h"

namespace pagoda::testing {

class ReferenceLlama {
 public:
  struct Options {
    // The RoPE layout to use instead of the architecture's (to show that
    // the wrong one gives clearly different logits).
    std::optional<RopeLayout> rope_layout;
  };
  explicit ReferenceLlama(const Model& model) : ReferenceLlama(model, Options{}) {}
  ReferenceLlama(const Model& model, const Options& options);
  // Logits after each token of `tokens` (positions 0, 1, ...), one row each.
  std::vector<std::vector<float>> run(const std::vector<int32_t>& tokens) const;

 private:
  struct Dense {
    int rows = 0, cols = 0;
    TensorType type = TensorType::F32;
    std::vector<float> w;
  };
  static Dense decode(const Matrix& m);
  static std::vector<float> matvec(const Dense& m, const std::vector<float>& x);

  ModelConfig cfg_;
  const ModelWeights* lw_;
  Dense embd_, output_;
  std::vector<std::vector<Dense>> layers_;               // per layer: q, k, v, o, gate, up, down
  std::vector<std::vector<std::vector<float>>> biases_;  // per layer: q, k, v (each empty if absent)
  bool neox_ = false;                                    // pairs (i, i + dims/2) rather than (2i, 2i+1)
  std::vector<float> freq_factors_;                      // rope_freqs.weight, or empty
  double position_divisor_ = 1.0;                        // linear RoPE scaling factor
};

}  // namespace pagoda::testing
