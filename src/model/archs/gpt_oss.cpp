// gpt-oss (OpenAI's open-weight models, 20b and 120b): a mixture of experts
// in every layer, routed by the top-k raw logits then a softmax over those k,
// with biases on the router and the experts and a clamped SwiGLU; attention
// with Q/K/V/O biases and a learned sink per head, sliding-window (128) and
// full layers alternating, YaRN on all of them.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

void declare_gpt_oss(const GgufFile& f, ModelConfig& c) {
  if (c.moe.n_expert == 0) fail<FormatError>("{}: a gpt-oss file needs {}", f.source(), arch_key(c, "expert_count"));
  c.act = Activation::SwigluOai;
  c.attn_sinks = true;
  c.ffn_norm_name = "post_attention_norm";
  c.moe.gating = ExpertGating::TopKSoftmax;
  c.moe.normalize = false;
  const uint64_t window = f.get_u64(arch_key(c, "attention.sliding_window"));
  if (window == 0 || window > (uint64_t(1) << 24))
    fail<FormatError>("{}: {} = {} is out of range", f.source(), arch_key(c, "attention.sliding_window"), window);
  const float local_base = float(read_f64(f, c, "rope.freq_base_swa", c.rope.base));
  const std::vector<bool> local = sliding_layers(f, c, 2);
  for (size_t l = 0; l < local.size(); ++l)
    if (local[l]) {
      c.layers[l].window = int(window);
      c.layers[l].rope.base = local_base;
    }
}

}  // namespace pagoda
