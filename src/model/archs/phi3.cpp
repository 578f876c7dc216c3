// Phi-3 / Phi-4: the llama block with NeoX RoPE and gate and up in one tensor
// (Q/K/V may be fused too: the loader takes either). Files state a sliding
// window, which llama.cpp ignores (its conversions record it wrongly); so do we,
// llama.cpp being the reference these files are made for.
#include "gguf/file.h"
#include "model/archs/archs.h"
#include "util/error.h"

namespace pagoda {

void declare_phi3(const GgufFile& f, ModelConfig& c) {
  c.fused_gate_up = true;
  // LongRoPE (Phi-3 128k): per-pair factors chosen by context length, not implemented yet.
  if (f.find_tensor("rope_factors_long.weight") || f.find_tensor("rope_factors_short.weight"))
    fail<Unsupported>("{}: LongRoPE (rope_factors_long/short, the 128k-context Phi-3 models) is not supported yet",
                      f.source());
}

}  // namespace pagoda
