// GLM-4 (0414): sandwich norms, gate and up in one tensor, RoPE over the first
// part of each head (rope.dimension_count), Q/K/V biases. block_count includes
// the multi-token-prediction layers at the end, which decoding does not run.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

void declare_glm4(const GgufFile& f, ModelConfig& c) {
  c.norms = NormPlacement::Sandwich;
  c.fused_gate_up = true;
  const uint64_t nextn = read_u64(f, c, "nextn_predict_layers", 0);
  if (nextn >= uint64_t(c.n_layer))
    fail<FormatError>("{}: {} = {} leaves no layers of {}", f.source(), arch_key(c, "nextn_predict_layers"), nextn,
                      c.n_layer);
  c.n_layer -= int(nextn);
  c.layers.resize(size_t(c.n_layer));
}

}  // namespace pagoda
