// Synthetic Llama-family models (llama, qwen2) with random weights, written
// with the project's GGUF writer: the subjects of the forward-pass tests and
// the benchmarks (random weights cost exactly what real ones do to run).
#pragma once

#include <cstdint>
#include <string>

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
  std::string arch = "llama";        // "llama" or "qwen2": general.architecture and the key prefix
  bool qkv_bias = false;             // blk.N.attn_{q,k,v}.bias (qwen2 files need them)
  bool rope_freq_factors = false;    // rope_freqs.weight, factors in [1, 8] like Llama 3.1's
  std::string rope_scaling;          // {arch}.rope.scaling.type; empty: not written
  float rope_scaling_factor = 1.0f;  // {arch}.rope.scaling.factor, written with rope_scaling
  std::string tokenizer = "llama";   // "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
};

// A writer holding the whole model: metadata, a small vocabulary and random
// weights. The "llama" vocabulary: <unk>, <s>, </s>, byte tokens, then filler
// pieces (n_vocab >= 259). The "gpt2" one: the 256 byte-level symbols,
// <|endoftext|> (BOS and EOS), then merged pieces (n_vocab >= 257).
GgufWriter synthetic_llama(const SyntheticModelSpec& spec);

}  // namespace pagoda
