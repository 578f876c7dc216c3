// Qwen2 and Qwen3: the llama block with NeoX RoPE; Qwen2 with Q/K/V biases,
// Qwen3 with a per-head RMSNorm on Q and K instead; Qwen3-MoE (Qwen3-30B-A3B,
// Qwen3-Coder) is Qwen3 with a mixture of experts for every FFN.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

void declare_qwen2(const GgufFile&, ModelConfig& c) { c.qkv_bias_required = true; }

void declare_qwen3(const GgufFile&, ModelConfig& c) { c.qk_norm = QkNorm::PerHead; }

void declare_qwen3moe(const GgufFile& f, ModelConfig& c) {
  declare_qwen3(f, c);
  if (c.moe.n_expert == 0) fail<FormatError>("{}: a qwen3moe file needs {}", f.source(), arch_key(c, "expert_count"));
  // Without the width key, llama.cpp splits the FFN length over the experts used.
  if (!f.find(arch_key(c, "expert_feed_forward_length"))) c.moe.n_ff = c.n_ff / c.moe.n_used;
}

}  // namespace pagoda
