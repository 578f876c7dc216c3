// The shape and hyper-parameters of a Llama-family model, read from GGUF
// metadata (`{arch}.*` keys), with the defaults llama.cpp uses when a key is
// absent. Validated so later code can index without re-checking.
//
// Architectures are rows of a small table (config.cpp): they share the
// Llama block and differ only in data: the RoPE layout and whether the Q/K/V
// projections must carry biases.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda {

class GgufFile;

// Which dimensions of a head RoPE rotates together (llama.cpp's rope modes).
enum class RopeLayout {
  Interleaved,  // pairs (x[2i], x[2i+1]): llama
  NeoX,         // pairs (x[i], x[i + rope_dims/2]): qwen2
};

struct ModelConfig {
  std::string arch;  // general.architecture
  std::string name;  // general.name, if any
  int n_vocab = 0;   // rows of token_embd.weight
  int n_embd = 0;    // model width
  int n_layer = 0;
  int n_ff = 0;  // FFN hidden width
  int n_head = 0;
  int n_head_kv = 0;  // < n_head means grouped-query attention
  int head_dim = 0;
  int n_ctx_train = 0;  // context length the model was trained for
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  int rope_dims = 0;  // leading dims of each head that RoPE rotates
  RopeLayout rope_layout = RopeLayout::Interleaved;
  // Linear RoPE scaling ({arch}.rope.scaling.type "linear"): positions are
  // divided by this factor before rotating. 1 without scaling.
  float rope_linear_factor = 1.0f;
  bool qkv_bias_required = false;  // the architecture always has Q/K/V biases

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // Bytes of K and V for one token over all layers, in F32.
  size_t kv_bytes_per_token() const { return size_t(2) * n_layer * kv_dim() * sizeof(float); }

  static ModelConfig from_gguf(const GgufFile& f);  // Unsupported / FormatError
};

const char* rope_layout_name(RopeLayout layout);  // "interleaved", "neox"

}  // namespace pagoda
