#include "testing/llama_oracle.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "testing/llama_cpp_libs.h"

namespace pagoda::testing {
namespace {

using namespace llama_api;

// llama.cpp's warnings and errors, kept for the exception of a failed call
// instead of flooding the test output with its loading chatter.
std::mutex log_mutex;
std::string log_text;
bool log_continues = false;  // the last line was kept: a kLogCont piece belongs to it

void capture_log(LogLevel level, const char* text, void*) {
  std::lock_guard lock(log_mutex);
  const bool keep = level == kLogWarn || level == kLogError || (level == kLogCont && log_continues);
  if (level != kLogCont) log_continues = keep;
  if (!keep || !text) return;
  log_text += text;
  // The last lines say why; an unbounded buffer would grow over a long test.
  if (log_text.size() > 16384) log_text.erase(0, log_text.size() - 8192);
}

}  // namespace

LlamaOracle& LlamaOracle::get() {
  static LlamaOracle oracle;
  return oracle;
}

LlamaOracle::LlamaOracle() {
  // libggml-base and libggml first: libllama's RUNPATH ($ORIGIN) finds them anyway, but
  // ggml's backend registry is in libggml and must learn where the CPU variants are.
  SharedLibrary::open("libggml-base.so");
  const SharedLibrary ggml = SharedLibrary::open("libggml.v0.5.0.so");
  const SharedLibrary llama = SharedLibrary::open("libllama.v0.5.0.so");
  // Logs go to our buffer from the first call on (backend loading logs too).
  llama.function<llama_log_set_fn>("llama_log_set")(capture_log, nullptr);
  // This build loads its CPU code at run time (libggml-cpu-<variant>.so, the best the CPU
  // runs); without a backend no model loads.
  ggml.function<ggml_backend_load_all_from_path_fn>("ggml_backend_load_all_from_path")(
      llama_cpp_lib_dir().string().c_str());
  llama.function<llama_backend_init_fn>("llama_backend_init")();
  model_default_params_ = llama.function<llama_model_default_params_fn>("llama_model_default_params");
  context_default_params_ = llama.function<llama_context_default_params_fn>("llama_context_default_params");
  quantize_default_params_ =
      llama.function<llama_model_quantize_default_params_fn>("llama_model_quantize_default_params");
  model_load_ = llama.function<llama_model_load_from_file_fn>("llama_model_load_from_file");
  model_free_ = llama.function<llama_model_free_fn>("llama_model_free");
  init_from_model_ = llama.function<llama_init_from_model_fn>("llama_init_from_model");
  free_ = llama.function<llama_free_fn>("llama_free");
  model_get_vocab_ = llama.function<llama_model_get_vocab_fn>("llama_model_get_vocab");
  vocab_n_tokens_ = llama.function<llama_vocab_n_tokens_fn>("llama_vocab_n_tokens");
  batch_get_one_ = llama.function<llama_batch_get_one_fn>("llama_batch_get_one");
  decode_ = llama.function<llama_decode_fn>("llama_decode");
  get_logits_ith_ = llama.function<llama_get_logits_ith_fn>("llama_get_logits_ith");
  get_embeddings_seq_ = llama.function<llama_get_embeddings_seq_fn>("llama_get_embeddings_seq");
  model_n_embd_ = llama.function<llama_model_n_embd_fn>("llama_model_n_embd");
  model_n_cls_out_ = llama.function<llama_model_n_cls_out_fn>("llama_model_n_cls_out");
  pooling_type_ = llama.function<llama_pooling_type_fn>("llama_pooling_type");
  quantize_ = llama.function<llama_model_quantize_fn>("llama_model_quantize");
  tokenize_ = llama.function<llama_tokenize_fn>("llama_tokenize");
  take_log();  // loading chatter
}

std::string LlamaOracle::take_log() {
  std::lock_guard lock(log_mutex);
  std::string out;
  out.swap(log_text);
  log_continues = false;
  return out;
}

std::vector<LlamaOracle::Step> LlamaOracle::greedy(const std::string& gguf_path, std::span<const int32_t> prompt,
                                                   int n_new, int top_k) {
  if (prompt.empty() || n_new < 1 || top_k < 1) throw std::invalid_argument("greedy: empty prompt or nothing to do");
  take_log();
  ModelParams mp = model_default_params_();
  mp.n_gpu_layers = 0;
  mp.load_mode = 0;            // LLAMA_LOAD_MODE_NONE: read, not mapped (the temp file may go away first)
  mp.use_extra_bufts = false;  // no repacked weights: the plain CPU kernels for every type
  std::unique_ptr<Model, void (*)(Model*)> model(model_load_(gguf_path.c_str(), mp), model_free_);
  if (!model) throw std::runtime_error("llama.cpp cannot load " + gguf_path + ":\n" + take_log());

  ContextParams cp = context_default_params_();
  cp.n_ctx = uint32_t(prompt.size()) + uint32_t(n_new) + 16;
  cp.n_batch = cp.n_ubatch = std::max<uint32_t>(uint32_t(prompt.size()), 32);
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn_type = kFlashAttnDisabled;
  cp.type_k = cp.type_v = kGgmlF32;  // Pagoda's default cache: no F16 rounding of K, V, Q
  cp.no_perf = true;
  std::unique_ptr<Context, void (*)(Context*)> ctx(init_from_model_(model.get(), cp), free_);
  if (!ctx) throw std::runtime_error("llama.cpp cannot make a context for " + gguf_path + ":\n" + take_log());
  const int32_t n_vocab = vocab_n_tokens_(model_get_vocab_(model.get()));

  std::vector<Token> input(prompt.begin(), prompt.end());
  std::vector<Step> steps;
  std::vector<int32_t> order(size_t(n_vocab), 0);
  for (int i = 0; i < n_new; ++i) {
    // llama_batch_get_one: one sequence, positions continuing the cache, logits of the last token.
    if (const int32_t rc = decode_(ctx.get(), batch_get_one_(input.data(), int32_t(input.size()))); rc != 0)
      throw std::runtime_error("llama_decode returned " + std::to_string(rc) + " on " + gguf_path + ":\n" + take_log());
    const float* logits = get_logits_ith_(ctx.get(), -1);
    if (!logits) throw std::runtime_error("llama.cpp gave no logits for " + gguf_path);
    // log-softmax in double: the values compared are the logprobs, not the logits (whose
    // offset is arbitrary).
    double mx = logits[0];
    for (int32_t v = 1; v < n_vocab; ++v) mx = std::max(mx, double(logits[v]));
    double z = 0;
    for (int32_t v = 0; v < n_vocab; ++v) z += std::exp(double(logits[v]) - mx);
    const double log_z = mx + std::log(z);
    for (int32_t v = 0; v < n_vocab; ++v) order[size_t(v)] = v;
    const int k = std::min(top_k, int(n_vocab));
    // Ties by token id, as std::max_element's first-wins argmax.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    Step step;
    step.token = order[0];
    for (int j = 0; j < k; ++j)
      step.top.emplace_back(order[size_t(j)], float(double(logits[order[size_t(j)]]) - log_z));
    steps.push_back(std::move(step));
    input.assign(1, steps.back().token);
  }
  return steps;
}

std::vector<float> LlamaOracle::embed(const std::string& gguf_path, std::span<const int32_t> prompt) {
  if (prompt.empty()) throw std::invalid_argument("embed: empty prompt");
  take_log();
  ModelParams mp = model_default_params_();
  mp.n_gpu_layers = 0;
  mp.load_mode = 0;
  mp.use_extra_bufts = false;
  std::unique_ptr<Model, void (*)(Model*)> model(model_load_(gguf_path.c_str(), mp), model_free_);
  if (!model) throw std::runtime_error("llama.cpp cannot load " + gguf_path + ":\n" + take_log());
  ContextParams cp = context_default_params_();
  cp.n_ctx = uint32_t(prompt.size()) + 16;
  cp.n_batch = cp.n_ubatch = std::max<uint32_t>(uint32_t(prompt.size()), 32);
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn_type = kFlashAttnDisabled;
  cp.type_k = cp.type_v = kGgmlF32;
  cp.no_perf = true;
  cp.embeddings = true;  // pooling_type stays unspecified: the file's
  std::unique_ptr<Context, void (*)(Context*)> ctx(init_from_model_(model.get(), cp), free_);
  if (!ctx) throw std::runtime_error("llama.cpp cannot make a context for " + gguf_path + ":\n" + take_log());
  std::vector<Token> input(prompt.begin(), prompt.end());
  if (const int32_t rc = decode_(ctx.get(), batch_get_one_(input.data(), int32_t(input.size()))); rc != 0)
    throw std::runtime_error("llama_decode returned " + std::to_string(rc) + " on " + gguf_path + ":\n" + take_log());
  const float* e = get_embeddings_seq_(ctx.get(), 0);
  if (!e) throw std::runtime_error("llama.cpp gave no pooled embedding for " + gguf_path + ":\n" + take_log());
  constexpr int32_t kRank = 4;  // LLAMA_POOLING_TYPE_RANK
  const size_t n =
      pooling_type_(ctx.get()) == kRank ? model_n_cls_out_(model.get()) : size_t(model_n_embd_(model.get()));
  return std::vector<float>(e, e + n);
}

std::vector<int32_t> LlamaOracle::tokenize(const std::string& gguf_path, std::string_view text, bool add_special,
                                           bool parse_special) {
  take_log();
  ModelParams mp = model_default_params_();
  mp.vocab_only = true;
  mp.load_mode = 0;  // read, not mapped
  std::unique_ptr<Model, void (*)(Model*)> model(model_load_(gguf_path.c_str(), mp), model_free_);
  if (!model) throw std::runtime_error("llama.cpp cannot load the vocabulary of " + gguf_path + ":\n" + take_log());
  const Vocab* vocab = model_get_vocab_(model.get());
  const std::string s(text);  // never a null pointer, even when empty
  // A first guess, then the size llama_tokenize asks for (a negative count).
  std::vector<Token> ids(text.size() + 8);
  int32_t n =
      tokenize_(vocab, s.c_str(), int32_t(s.size()), ids.data(), int32_t(ids.size()), add_special, parse_special);
  if (n < 0) {
    ids.resize(size_t(-n));
    n = tokenize_(vocab, s.c_str(), int32_t(s.size()), ids.data(), int32_t(ids.size()), add_special, parse_special);
  }
  if (n < 0) throw std::runtime_error("llama_tokenize failed on " + gguf_path + ":\n" + take_log());
  ids.resize(size_t(n));
  return ids;
}

LlamaOracle::Speed LlamaOracle::speed(const std::string& gguf_path, int threads, int n_prompt, int n_gen) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const auto t_load = Clock::now();
  take_log();
  ModelParams mp = model_default_params_();
  mp.n_gpu_layers = 0;
  std::unique_ptr<Model, void (*)(Model*)> model(model_load_(gguf_path.c_str(), mp), model_free_);
  if (!model) throw std::runtime_error("llama.cpp cannot load " + gguf_path + ":\n" + take_log());
  const int32_t n_vocab = vocab_n_tokens_(model_get_vocab_(model.get()));
  auto context = [&] {
    ContextParams cp = context_default_params_();
    cp.n_ctx = uint32_t(n_prompt + n_gen + 1);
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    std::unique_ptr<Context, void (*)(Context*)> ctx(init_from_model_(model.get(), cp), free_);
    if (!ctx) throw std::runtime_error("llama.cpp cannot make a context for " + gguf_path + ":\n" + take_log());
    return ctx;
  };
  auto decode = [&](Context* ctx, std::vector<Token>& tokens) {
    if (const int32_t rc = decode_(ctx, batch_get_one_(tokens.data(), int32_t(tokens.size()))); rc != 0)
      throw std::runtime_error("llama_decode returned " + std::to_string(rc) + ":\n" + take_log());
  };
  std::vector<Token> prompt(static_cast<size_t>(n_prompt));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = Token(3 + i * 7919 % size_t(n_vocab - 3));
  Speed out;
  {
    auto first = context();
    std::vector<Token> start(prompt.begin(), prompt.begin() + std::min<ptrdiff_t>(16, n_prompt));
    decode(first.get(), start);
    out.first_token_s = seconds(t_load);
  }
  {
    auto warm = context();  // untimed: the first pass builds and allocates what later ones reuse
    decode(warm.get(), prompt);
  }
  {
    auto ctx = context();
    const auto t0 = Clock::now();
    decode(ctx.get(), prompt);
    out.prefill_tok_s = n_prompt / seconds(t0);
  }
  auto ctx = context();
  std::vector<Token> one = {prompt[0]};
  decode(ctx.get(), one);  // untimed: the first step allocates
  const auto t0 = Clock::now();
  for (int i = 0; i < n_gen; ++i) {
    one[0] = prompt[size_t(i + 1) % prompt.size()];
    decode(ctx.get(), one);
  }
  out.decode_tok_s = n_gen / seconds(t0);
  return out;
}

void LlamaOracle::quantize(const std::string& in, const std::string& out, LlamaFtype ftype, bool pure) {
  take_log();
  QuantizeParams p = quantize_default_params_();
  p.ftype = ftype;
  p.nthread = 2;
  p.pure = pure;
  if (quantize_(in.c_str(), out.c_str(), &p) != 0)
    throw std::runtime_error("llama_model_quantize failed on " + in + ":\n" + take_log());
}

}  // namespace pagoda::testing
