// Synthetic Llama models with random weights, written with the project's
// GGUF writer: the subjects of the forward-pass tests and the benchmarks
// (random weights cost exactly what real ones do to run).
#pragma once

#include <cstdint>

#include "gguf/types.h"
#include "gguf/writer.h"

namespace pagoda {

struct SyntheticModelSpec {
  int n_vocab = 320;  // >= 259 gives a usable SentencePiece-style vocabulary
  int n_embd = 64;
  int n_layer = 2;
  int n_ff = 96;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ctx = 512;
  TensorType type = TensorType::F32;  // type of every matrix; norms stay F32
  bool tied_embeddings = true;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  uint64_t seed = 1;
};

// A writer holding the whole model: metadata, a small vocabulary
// (<unk>, <s>, </s>, byte tokens, then filler pieces) and random weights.
GgufWriter synthetic_llama(const SyntheticModelSpec& spec);

}  // namespace pagoda
