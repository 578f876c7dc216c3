// Qwen2 and Qwen3: the llama block with NeoX RoPE; Qwen2 with Q/K/V biases,
// Qwen3 with a per-head RMSNorm on Q and K instead.
#include "model/archs/archs.h"

namespace pagoda {

void declare_qwen2(const GgufFile&, ModelConfig& c) { c.qkv_bias_required = true; }

void declare_qwen3(const GgufFile&, ModelConfig& c) { c.qk_norm = QkNorm::PerHead; }

}  // namespace pagoda
