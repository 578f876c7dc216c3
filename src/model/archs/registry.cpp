#include "model/archs/archs.h"

namespace pagoda {

namespace {
// The RoPE layout is a property of the architecture, not a key (llama.cpp's rope-type table).
constexpr Arch kArchs[] = {
    {"llama", RopeLayout::Interleaved, declare_llama, true},  // also Mistral, Mixtral, TinyLlama, SmolLM 1/2
    {"qwen2", RopeLayout::NeoX, declare_qwen2},
    {"qwen3", RopeLayout::NeoX, declare_qwen3},
    {"qwen3moe", RopeLayout::NeoX, declare_qwen3moe, true},
    {"gemma2", RopeLayout::NeoX, declare_gemma2},
    {"gemma3", RopeLayout::NeoX, declare_gemma3},
    {"gemma4", RopeLayout::NeoX, declare_gemma4, true},
    {"granite", RopeLayout::Interleaved, declare_granite},
    {"smollm3", RopeLayout::Interleaved, declare_smollm3},
    {"olmo2", RopeLayout::NeoX, declare_olmo2},
    {"mistral3", RopeLayout::Interleaved, declare_mistral3},
    {"phi3", RopeLayout::NeoX, declare_phi3},
    {"glm4", RopeLayout::Interleaved, declare_glm4},
    {"gpt-oss", RopeLayout::NeoX, declare_gpt_oss, true},
    {"qwen35", RopeLayout::NeoX, declare_qwen35},
    {"qwen35moe", RopeLayout::NeoX, declare_qwen35moe, true},
    {"bert", RopeLayout::NeoX, declare_bert},
    {"nomic-bert", RopeLayout::NeoX,
     declare_nomic_bert},  // an encoder: embeddings only (no RoPE; the layout is llama.cpp's)
};
}  // namespace

std::span<const Arch> architectures() { return kArchs; }

}  // namespace pagoda
