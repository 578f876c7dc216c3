// Synthetic models of every supported architecture with random weights,
// written with the project's GGUF writer: the subjects of the forward-pass
// tests, the llama.cpp oracle tests and the benchmarks (random weights cost
// exactly what real ones do to run). The metadata keys are the ones llama.cpp's
// converters write; the tensors are the ones the architecture's declaration
// (model/archs/) asks for, so a file llama.cpp loads and runs alike is the check
// that both are right.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  TensorType type = TensorType::F32;      // type of every matrix; norms stay F32
  std::optional<TensorType> expert_type;  // the experts' 3-D matrices when set (MXFP4_MOE: MXFP4, the rest Q8_0)
  bool tied_embeddings = true;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  uint64_t seed = 1;
  std::string arch = "llama";          // general.architecture and the key prefix: any of model/archs/
  int head_dim = 0;                    // {arch}.attention.key_length/value_length when set; else n_embd / n_head
  int rope_dims = 0;                   // {arch}.rope.dimension_count when set (partial rotary); else the head size
  bool qkv_bias = false;               // blk.N.attn_{q,k,v}.bias (qwen2 files need them)
  bool out_bias = false;               // blk.N.attn_output.bias (gpt-oss)
  bool expert_bias = false;            // blk.N.ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias (gpt-oss)
  bool fused_qkv = false;              // one blk.N.attn_qkv tensor (phi3's layout) instead of three
  int sliding_window = 0;              // {arch}.attention.sliding_window when set (gemma2/3, olmo2)
  int sliding_pattern = 0;             // {arch}.attention.sliding_window_pattern (a period) when set
  float softcaps[2] = {50.0f, 30.0f};  // gemma2's attn_ and final_logit_softcapping (the real models')
  float rope_freq_base_swa = 0;        // {arch}.rope.freq_base_swa when set
  bool rope_freq_factors = false;      // rope_freqs.weight, factors in [1, 8] like Llama 3.1's
  bool longrope = false;               // rope_factors_long/short.weight and rope.scaling.attn_factor, like Phi-3 128k's
  std::string rope_scaling;            // {arch}.rope.scaling.type; empty: not written
  float rope_scaling_factor = 1.0f;    // {arch}.rope.scaling.factor, written with rope_scaling
  int rope_orig_ctx = 0;               // {arch}.rope.scaling.original_context_length when set (YaRN)
  int n_expert = 0;                    // {arch}.expert_count: a mixture of experts in every layer when set
  int n_expert_used = 0;               // {arch}.expert_used_count
  int n_ff_expert = 0;                 // {arch}.expert_feed_forward_length when set
  // Gated DeltaNet layers (qwen35, qwen35moe): {arch}.ssm.* keys; value heads
  // of ssm_state too, as the real models (llama.cpp needs them equal).
  int ssm_conv_kernel = 4;
  int ssm_state = 16;   // key (and value) head size
  int ssm_k_heads = 2;  // ssm.group_count
  int ssm_v_heads = 4;  // ssm.time_step_rank
  int full_attention_interval = 4;
  // gemma4: the sliding layers' head size ({arch}.attention.key_length_swa;
  // head_dim is then the global layers'), per-layer inputs of this width, the
  // last layers reading earlier ones' K/V. Its sliding pattern is written as
  // the array of flags sliding_pattern stands for.
  int head_dim_swa = 0;
  int n_embd_per_layer = 0;
  int shared_kv_layers = 0;
  bool global_k_eq_v = false;  // gemma4's global layers without attn_v (V is K's projection: 31B, 26B)
  int n_head_kv_global = 0;  // gemma4's global layers' KV heads, head_count_kv an array, when set (31B: 4, sliding 16)
  bool fused_gate_up_exps = false;          // one blk.N.ffn_gate_up_exps (gemma4's layout) instead of two
  std::string tokenizer = "llama";          // "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::vector<std::string> special_tokens;  // control tokens in place of the last pieces (a template's markers)
  std::string eos_token;                    // the EOS token, when not the vocabulary's default
  std::string chat_template;                // tokenizer.chat_template, when set
  int pooling_type = 0;                     // {arch}.pooling_type when > 0: an embedding model (model/config.h)
  int n_cls_out = 0;  // a reranker's classification head: cls.output.weight of this many labels when > 0
  // bert, nomic-bert: {arch}.attention.causal (their converter writes false;
  // true makes a negative control). A bert file has every bias, token types
  // and positions; a nomic-bert file token types and no bias (fused_qkv: its layout).
  bool causal = false;
};

// A writer of the whole model: metadata, a small vocabulary and random
// weights, its matrices made (and quantized) one at a time as the file is
// written, so a model larger than memory can be. The "llama" vocabulary: <unk>, <s>, </s>, byte tokens, then filler
// pieces (n_vocab >= 259). The "gpt2" one: the 256 byte-level symbols,
// <|endoftext|> (BOS and EOS), then merged pieces (n_vocab >= 257).
GgufWriter synthetic_model(const SyntheticModelSpec& spec);

// The benchmarks' shapes (untied, a 32k vocabulary but for 10m and 8b):
// "10m" (the quick one), "100m" (GPT-2-small's width), "1b" (TinyLlama-1.1B),
// "8b" (Llama-3.1-8B: 32 layers, a 128,256-token vocabulary; the GPU checks'),
// "30b-a3b": Qwen3-30B-A3B's layers (128 experts of 768, 8 a token; 32 heads
// of 128 over 4 KV heads), 8 of its 48, so a token reads ~0.5B of 4.9B
// weights ("30b-a3b-full": all 48, ~30B weights, 17 GB at Q4_K);
// "gpt-oss-20b": its layers, 4 of 24 (32 experts of 2880, 4 a token,
// alternating 128-token windows; "gpt-oss-20b-full": all 24 and its
// 201,088-token vocabulary, 20.9B weights); "10m-hybrid": a qwen35 of the
// 10m's size (6 Gated DeltaNet layers and 2 attention); "9b-hybrid":
// Qwen3.5-9B's layers (qwen35), 8 of its 32; "35b-a3b-hybrid":
// Qwen3.5/3.6-35B-A3B's (qwen35moe), 4 of its 40. InvalidArgument for another name.
SyntheticModelSpec benchmark_shape(const std::string& name);

}  // namespace pagoda
