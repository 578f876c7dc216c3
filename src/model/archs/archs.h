// The architectures Pagoda runs, each a short declaration of how its block
// differs from the llama block (model/config.h). ModelConfig::from_gguf reads
// what every architecture shares (shape, epsilon, RoPE), then the
// declaration, then checks the result; a declaration reads only its own keys.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace pagoda {

class GgufFile;

struct Arch {
  std::string_view name;  // general.architecture
  RopeLayout rope_layout;
  // Adjusts c (already holding the shared fields and uniform layers) to the architecture.
  void (*declare)(const GgufFile& f, ModelConfig& c);
  bool experts = false;  // whether its files may hold a mixture of experts ({arch}.expert_count)
};

// Every supported architecture, in the order messages list them.
std::span<const Arch> architectures();

// Shared readers for the declarations.
std::string arch_key(const ModelConfig& c, std::string_view key);  // "{arch}.{key}"
double read_f64(const GgufFile& f, const ModelConfig& c, std::string_view key, double dflt);
uint64_t read_u64(const GgufFile& f, const ModelConfig& c, std::string_view key, uint64_t dflt);

// Which layers attend through a sliding window: the array
// {arch}.attention.sliding_window_pattern where the file has one, else every
// layer but the last of each `period` (the key as a number, else
// `default_period`). FormatError when the array's length is not n_layer.
std::vector<bool> sliding_layers(const GgufFile& f, const ModelConfig& c, uint64_t default_period);

// The declarations (archs/*.cpp).
void declare_llama(const GgufFile& f, ModelConfig& c);
void declare_qwen2(const GgufFile& f, ModelConfig& c);
void declare_qwen3(const GgufFile& f, ModelConfig& c);
void declare_qwen3moe(const GgufFile& f, ModelConfig& c);
void declare_gemma2(const GgufFile& f, ModelConfig& c);
void declare_gemma3(const GgufFile& f, ModelConfig& c);
void declare_gemma4(const GgufFile& f, ModelConfig& c);
void declare_granite(const GgufFile& f, ModelConfig& c);
void declare_smollm3(const GgufFile& f, ModelConfig& c);
void declare_olmo2(const GgufFile& f, ModelConfig& c);
void declare_mistral3(const GgufFile& f, ModelConfig& c);
void declare_phi3(const GgufFile& f, ModelConfig& c);
void declare_glm4(const GgufFile& f, ModelConfig& c);
void declare_gpt_oss(const GgufFile& f, ModelConfig& c);
void declare_qwen35(const GgufFile& f, ModelConfig& c);
void declare_qwen35moe(const GgufFile& f, ModelConfig& c);
void declare_bert(const GgufFile& f, ModelConfig& c);
void declare_nomic_bert(const GgufFile& f, ModelConfig& c);

}  // namespace pagoda
