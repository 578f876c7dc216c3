// The part of llama.cpp's C API (include/llama.h and ggml's log/backend
// calls) that the oracle tests call through dlopen (testing/llama_cpp_libs.h).
// The libraries are never linked and their headers are not vendored, so these
// declarations are our own; they are only correct for the libraries of
// @node-llama-cpp/linux-x64@3.22.1, built from llama.cpp v0.5.0.
//
// Every struct passed or returned by value has the field order, types and
// size of v0.5.0's include/llama.h, field by field: a wrong layout would
// shift every later field silently, so tests/model/llama_cpp_oracle_test.cpp
// checks the documented defaults of each (the last fields included).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda::testing::llama_api {

// Opaque handles.
struct Model;
struct Context;
struct Vocab;

using Token = int32_t;

// enum ggml_type: the values the oracle uses.
enum GgmlType : int32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlTypeCount = 43,  // "no override" in llama_model_quantize_params
};

// enum llama_ftype: the file types llama_model_quantize writes.
enum class Ftype : int32_t {
  kAllF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_M = 12,
  kQ4_K_M = 15,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
  kBF16 = 32,
  kMXFP4_MOE = 38,  // experts MXFP4, other matrices Q8_0
};

// enum ggml_log_level.
enum LogLevel : int32_t { kLogNone = 0, kLogDebug = 1, kLogInfo = 2, kLogWarn = 3, kLogError = 4, kLogCont = 5 };
using LogCallback = void (*)(LogLevel level, const char* text, void* user_data);

// enum llama_flash_attn_type.
enum FlashAttn : int32_t { kFlashAttnAuto = -1, kFlashAttnDisabled = 0, kFlashAttnEnabled = 1 };

// struct llama_model_params.
struct ModelParams {
  void* devices;                      // ggml_backend_dev_t*, NULL-terminated
  const void* tensor_buft_overrides;  // const llama_model_tensor_buft_override*
  int32_t n_gpu_layers;
  int32_t split_mode;  // enum llama_split_mode
  int32_t load_mode;   // enum llama_load_mode
  int32_t lazy_mode;   // enum llama_lazy_mode
  int32_t main_gpu;
  const float* tensor_split;
  bool (*progress_callback)(float progress, void* user_data);
  void* progress_callback_user_data;
  const void* kv_overrides;  // const llama_model_kv_override*
  bool vocab_only;
  bool check_tensors;
  bool use_extra_bufts;
  bool no_host;
  bool no_alloc;
  bool load_mtp;
};
static_assert(sizeof(ModelParams) == 80);

// struct llama_context_params.
struct ContextParams {
  uint32_t n_ctx;
  uint32_t n_batch;
  uint32_t n_ubatch;
  uint32_t n_seq_max;
  uint32_t n_rs_seq;
  uint32_t n_outputs_max;
  uint32_t n_outputs_max_per_seq;
  int32_t n_threads;
  int32_t n_threads_batch;
  int32_t ctx_type;           // enum llama_context_type
  int32_t rope_scaling_type;  // enum llama_rope_scaling_type
  int32_t pooling_type;       // enum llama_pooling_type
  int32_t attention_type;     // enum llama_attention_type
  int32_t flash_attn_type;    // enum llama_flash_attn_type
  float rope_freq_base;
  float rope_freq_scale;
  float yarn_ext_factor;
  float yarn_attn_factor;
  float yarn_beta_fast;
  float yarn_beta_slow;
  uint32_t yarn_orig_ctx;
  float defrag_thold;
  void* cb_eval;  // ggml_backend_sched_eval_callback
  void* cb_eval_user_data;
  int32_t type_k;  // enum ggml_type
  int32_t type_v;
  void* abort_callback;  // ggml_abort_callback
  void* abort_callback_data;
  bool embeddings;
  bool offload_kqv;
  bool no_perf;
  bool op_offload;
  bool swa_full;
  bool kv_unified;
  void* samplers;  // llama_sampler_seq_config*
  size_t n_samplers;
  Context* ctx_other;
};
static_assert(sizeof(ContextParams) == 160);

// struct llama_model_quantize_params.
struct QuantizeParams {
  int32_t nthread;
  Ftype ftype;
  int32_t output_tensor_type;    // enum ggml_type; kGgmlTypeCount: the ftype's rule
  int32_t token_embedding_type;  // likewise
  bool allow_requantize;
  bool quantize_output_tensor;
  bool only_copy;
  bool pure;  // every matrix in the ftype's type, no per-tensor mix
  bool keep_split;
  bool dry_run;
  const void* imatrix;       // const llama_model_imatrix_data*
  const void* kv_overrides;  // const llama_model_kv_override*
  const void* tt_overrides;  // const llama_model_tensor_override*
  const int32_t* prune_layers;
  size_t max_buf_size;
};
static_assert(sizeof(QuantizeParams) == 64);

// struct llama_batch.
struct Batch {
  int32_t n_tokens;
  Token* token;
  float* embd;
  int32_t* pos;
  int32_t* n_seq_id;
  int32_t** seq_id;
  int8_t* logits;
};
static_assert(sizeof(Batch) == 56);

// The functions, by their C names.
using ggml_backend_load_all_from_path_fn = void(const char* dir);
using llama_log_set_fn = void(LogCallback callback, void* user_data);
using llama_backend_init_fn = void();
using llama_model_default_params_fn = ModelParams();
using llama_context_default_params_fn = ContextParams();
using llama_model_quantize_default_params_fn = QuantizeParams();
using llama_model_load_from_file_fn = Model*(const char* path, ModelParams params);
using llama_model_free_fn = void(Model* model);
using llama_init_from_model_fn = Context*(Model* model, ContextParams params);
using llama_free_fn = void(Context* ctx);
using llama_model_get_vocab_fn = const Vocab*(const Model* model);
using llama_vocab_n_tokens_fn = int32_t(const Vocab* vocab);
using llama_batch_get_one_fn = Batch(Token* tokens, int32_t n_tokens);
using llama_decode_fn = int32_t(Context* ctx, Batch batch);
using llama_get_logits_ith_fn = float*(Context* ctx, int32_t i);
using llama_get_embeddings_seq_fn = float*(Context* ctx, int32_t seq_id);
using llama_model_n_embd_fn = int32_t(const Model* model);
using llama_model_n_cls_out_fn = uint32_t(const Model* model);
using llama_pooling_type_fn = int32_t(const Context* ctx);
using llama_model_quantize_fn = uint32_t(const char* in, const char* out, const QuantizeParams* params);
// The number of tokens written, or minus the number needed when n_tokens_max is too small.
using llama_tokenize_fn = int32_t(const Vocab* vocab, const char* text, int32_t text_len, Token* tokens,
                                  int32_t n_tokens_max, bool add_special, bool parse_special);

}  // namespace pagoda::testing::llama_api
