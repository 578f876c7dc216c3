// OLMo 2: norms after each sub-block only, and an RMSNorm over all of Q and
// all of K. OLMo 3 is the same architecture with sliding-window layers (3
// local : 1 global) whose RoPE is unscaled.
#include "model/archs/archs.h"

namespace pagoda {

void declare_olmo2(const GgufFile& f, ModelConfig& c) {
  c.norms = NormPlacement::Post;
  c.qk_norm = QkNorm::Whole;
  const uint64_t window = read_u64(f, c, "attention.sliding_window", 0);
  if (window == 0) return;
  const float local_base = float(read_f64(f, c, "rope.freq_base_swa", c.rope.base));
  const std::vector<bool> local = sliding_layers(f, c, 4);
  for (size_t l = 0; l < local.size(); ++l)
    if (local[l]) {
      c.layers[l].window = int(window);
      c.layers[l].rope.base = local_base;
      c.layers[l].rope.scaling = RopeScaling::None;  // OLMo 3 rotates its local layers unscaled
      c.layers[l].rope.attn_factor = 1.0f;
    }
}

}  // namespace pagoda
