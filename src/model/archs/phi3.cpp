// Phi-3 / Phi-4: the llama block with NeoX RoPE and gate and up in one tensor
// (Q/K/V may be fused too: the loader takes either). Files state a sliding
// window, which llama.cpp ignores (its conversions record it wrongly); so do we,
// llama.cpp being the reference these files are made for. The long-context
// models (Phi-3 128k, Phi-3.5, Phi-4-mini) carry LongRoPE as two factor
// tensors and rope.scaling.attn_factor: shared readers (config.cpp, weights.cpp).
#include "model/archs/archs.h"

namespace pagoda {

void declare_phi3(const GgufFile&, ModelConfig& c) { c.fused_gate_up = true; }

}  // namespace pagoda
