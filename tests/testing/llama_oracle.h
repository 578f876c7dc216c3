// llama.cpp v0.5.0 (libllama, dlopen'ed: testing/llama_cpp_libs.h) as the
// model oracle of the forward-pass tests: it must load a file (the file is
// well formed), and its greedy tokens and log-probabilities are the ones
// Pagoda must reproduce (tests/model/oracle_compare.h compares). It also
// quantizes files with llama.cpp's own quantizer, so Pagoda is tested on the
// files users download, not only on the ones `pagoda quantize` writes.
//
// Tests first call PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix,
// testing::kLlamaCppPackage), then LlamaOracle::get().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "testing/llama_api.h"

namespace pagoda::testing {

using LlamaFtype = llama_api::Ftype;

class LlamaOracle {
 public:
  // The libraries, loaded and initialised once per process (CPU backend,
  // logs captured rather than printed). Throws std::runtime_error when they
  // cannot be loaded.
  static LlamaOracle& get();

  // One generated position: the argmax token and the top_k tokens' natural
  // log-probabilities, most likely first.
  struct Step {
    int32_t token = 0;
    std::vector<std::pair<int32_t, float>> top;
  };

  // Greedy decoding of n_new tokens after `prompt` (no BOS added): the
  // prompt is decoded as one batch, then one token at a time, each step
  // feeding back its argmax. F32 K/V cache, no flash attention, one thread:
  // the computation closest to Pagoda's default. Throws std::runtime_error,
  // with llama.cpp's own error lines, when the file does not load or a
  // decode fails.
  std::vector<Step> greedy(const std::string& gguf_path, std::span<const int32_t> prompt, int n_new, int top_k);

  // The pooled embedding of `prompt` (no BOS added) as an embedding model:
  // llama_get_embeddings_seq after one batch, pooled as the file's
  // pooling_type says, not normalised. F32 cache, no flash attention, one
  // thread. A reranker's (rank pooling): its n_cls_out scores. Throws
  // std::runtime_error as greedy() does.
  std::vector<float> embed(const std::string& gguf_path, std::span<const int32_t> prompt);

  // llama_model_quantize: `in` (F32/F16/BF16) to `out` in `ftype`, with
  // llama.cpp's per-tensor rules (a Q6_K output, more bits for some
  // attn_v/ffn_down rows, fallbacks for widths not a multiple of 256) unless
  // `pure`. Throws std::runtime_error when it fails.
  void quantize(const std::string& in, const std::string& out, LlamaFtype ftype, bool pure = false);

  // llama-bench's two figures on `threads` threads, with llama.cpp's own
  // defaults (mapped weights repacked for its fastest kernels, flash attention
  // where it chooses it, an F16 cache): prefill tok/s of one n_prompt-token
  // batch, and decode tok/s of n_gen single-token steps after one untimed
  // step, each on a fresh context. Also the time from the start of the load
  // to the logits of a 16-token prompt (a server's first token after a cold
  // start, for files of many GB). For benchmarks (bench/), not tests.
  struct Speed {
    double prefill_tok_s = 0, decode_tok_s = 0, first_token_s = 0;
  };
  Speed speed(const std::string& gguf_path, int threads, int n_prompt, int n_gen);

  // llama_tokenize on the vocabulary of `gguf_path`, loaded vocab-only (no
  // tensors needed). add_special: the BOS/EOS (for WordPiece [CLS]/[SEP]) the
  // vocabulary adds; parse_special: control-token text becomes those tokens.
  // Throws std::runtime_error when the file does not load.
  std::vector<int32_t> tokenize(const std::string& gguf_path, std::string_view text, bool add_special,
                                bool parse_special);

  // The documented defaults, for the layout test of testing/llama_api.h.
  llama_api::ModelParams model_defaults() const { return model_default_params_(); }
  llama_api::ContextParams context_defaults() const { return context_default_params_(); }
  llama_api::QuantizeParams quantize_defaults() const { return quantize_default_params_(); }

 private:
  LlamaOracle();
  std::string take_log();  // the error and warning lines logged since the last call

  llama_api::llama_model_default_params_fn* model_default_params_;
  llama_api::llama_context_default_params_fn* context_default_params_;
  llama_api::llama_model_quantize_default_params_fn* quantize_default_params_;
  llama_api::llama_model_load_from_file_fn* model_load_;
  llama_api::llama_model_free_fn* model_free_;
  llama_api::llama_init_from_model_fn* init_from_model_;
  llama_api::llama_free_fn* free_;
  llama_api::llama_model_get_vocab_fn* model_get_vocab_;
  llama_api::llama_vocab_n_tokens_fn* vocab_n_tokens_;
  llama_api::llama_batch_get_one_fn* batch_get_one_;
  llama_api::llama_decode_fn* decode_;
  llama_api::llama_get_logits_ith_fn* get_logits_ith_;
  llama_api::llama_get_embeddings_seq_fn* get_embeddings_seq_;
  llama_api::llama_model_n_embd_fn* model_n_embd_;
  llama_api::llama_model_n_cls_out_fn* model_n_cls_out_;
  llama_api::llama_pooling_type_fn* pooling_type_;
  llama_api::llama_model_quantize_fn* quantize_;
  llama_api::llama_tokenize_fn* tokenize_;
};

}  // namespace pagoda::testing
