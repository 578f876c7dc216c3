// The shape and hyper-parameters of a Llama-family model, read from GGUF
// metadata (`{arch}.*` keys), with the defaults llama.cpp uses when a key is
// absent. Validated so later code can index without re-checking.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda {

class GgufFile;

struct ModelConfig {
  std::string arch;      // general.architecture
  std::string name;      // general.name, if any
  int n_vocab = 0;       // rows of token_embd.weight
  int n_embd = 0;        // model width
  int n_layer = 0;
  int n_ff = 0;          // FFN hidden width
  int n_head = 0;
  int n_head_kv = 0;     // < n_head means grouped-query attention
  int head_dim = 0;
  int n_ctx_train = 0;   // context length the model was trained for
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  int rope_dims = 0;     // leading dims of each head that RoPE rotates

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // Bytes of K and V for one token over all layers, in F32.
  size_t kv_bytes_per_token() const { return size_t(2) * n_layer * kv_dim() * sizeof(float); }

  static ModelConfig from_gguf(const GgufFile& f);  // Unsupported / FormatError
};

}  // namespace pagoda
