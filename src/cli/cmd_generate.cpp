// `pagoda generate`: one prompt, one completion, streamed to stdout as it is
// produced (or one JSON object with --json), through the engine's offline
// path: the same scheduler, block manager and forward pass as the server.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/load_engine.h"
#include "cli/model_option.h"
#include "engine/engine.h"
#include "engine/output_queue.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/thread_priority.h"

namespace pagoda::cli {
namespace {

struct GenerateOpts {
  ModelOption model;
  std::string prompt;
  int max_tokens = 256;
  SamplingParams sampling;
  int threads = 0;
  bool mmap = false;
  int block_size = 16;
  DeviceFlags device_flags;  // --kv-type, --enforce-eager
  EngineConfig device;       // --device and the GPU's flags
  bool json = false;
  int logprobs = -1;
  uint64_t seed = 0;
  bool no_bos = false;
};

nlohmann::json logprob_entries(const Tokenizer& tok, const GeneratedLogprobs& lp) {
  auto out = nlohmann::json::array();
  for (const auto& t : lp.top)
    out.push_back({{"id", t.token}, {"token", tok.decode_bytes(t.token)}, {"logprob", t.logprob}});
  return out;
}

int run_generate(const GenerateOpts& o, bool seed_given) {
  Request req;
  req.sampling = o.sampling;
  req.sampling.max_tokens = o.max_tokens;
  if (seed_given) req.sampling.seed = o.seed;
  if (o.logprobs >= 0) req.sampling.logprobs = o.logprobs;
  req.sampling.validate();

  EngineConfig cfg = o.device;
  cfg.block_size = o.block_size;
  cfg.threads = o.threads;
  cfg.mmap = o.mmap;
  cfg.weights_before_serving = true;  // one completion: decode at full speed from its first token
  cfg.sched.max_num_seqs = 1;
  cfg.log_interval_s = 0;
  if (cfg.block_size < 1 || cfg.block_size > 1024) fail<InvalidArgument>("--block-size must be in [1, 1024]");
  if (!std::getenv("PAGODA_LOG")) spdlog::set_level(spdlog::level::warn);  // stdout is the text; keep stderr quiet
  auto engine = load_engine(o.model.resolve(), cfg, o.device_flags);
  const Tokenizer& tok = *engine->tokenizer();
  req.prompt = tok.encode(o.prompt, !o.no_bos && tok.add_bos_by_default());
  if (req.prompt.empty()) fail<InvalidArgument>("the prompt is empty and the model adds no BOS token");
  const auto prompt = req.prompt;
  // Like llama.cpp, generation stops at the end of the context rather than refusing.
  if (int64_t(prompt.size()) < engine->max_model_len())
    req.sampling.max_tokens = std::min<int64_t>(o.max_tokens, engine->max_model_len() - int64_t(prompt.size()));

  // This thread is woken once a token; it must not take the engine's core when it is (thread_priority.h).
  run_as_batch_thread();
  auto queue = OutputQueue::create();
  engine->submit(std::move(req), queue->sink());
  std::vector<int32_t> output;
  std::string text;
  nlohmann::json top = nlohmann::json::array();
  FinishReason reason = FinishReason::none;
  std::string error;
  for (bool done = false; !done;) {
    auto out = queue->pop();
    if (!out) continue;
    output.insert(output.end(), out->tokens.begin(), out->tokens.end());
    text += out->text;
    for (const auto& lp : out->logprobs) top.push_back(logprob_entries(tok, lp));
    if (!o.json && !out->text.empty()) {
      std::fwrite(out->text.data(), 1, out->text.size(), stdout);
      std::fflush(stdout);
    }
    if (out->finish != FinishReason::none) {
      reason = out->finish;
      error = out->error;
    }
    done = out->request_done;
  }
  if (reason == FinishReason::error) fail("generation failed: {}", error);
  if (o.json) {
    nlohmann::json j = {{"prompt_token_ids", prompt},
                        {"output_token_ids", output},
                        {"text", text},
                        {"finish_reason", to_string(reason)}};
    if (o.logprobs > 0) j["top_logprobs"] = top;
    std::puts(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::puts("");
  }
  return 0;
}

}  // namespace

Command add_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateOpts>();
  // Defaults as llama.cpp's CLI: a little randomness, filtered.
  o->sampling.temperature = 0.8f;
  o->sampling.top_k = 40;
  o->sampling.top_p = 0.95f;
  o->sampling.min_p = 0.05f;
  auto* cmd = app.add_subcommand("generate", "Complete one prompt, streaming the text to stdout");
  o->model.add(cmd);
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
  cmd->add_option("-n,--max-tokens", o->max_tokens, "Most tokens to generate (capped by the context)")
      ->capture_default_str();
  cmd->add_option("--temperature,--temp", o->sampling.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "0 = off")->capture_default_str();
  cmd->add_option("--top-p", o->sampling.top_p, "1 = off")->capture_default_str();
  cmd->add_option("--min-p", o->sampling.min_p, "0 = off")->capture_default_str();
  cmd->add_option("--repetition-penalty", o->sampling.repetition_penalty, "1 = off")->capture_default_str();
  cmd->add_option("--frequency-penalty", o->sampling.frequency_penalty, "[-2, 2]")->capture_default_str();
  cmd->add_option("--presence-penalty", o->sampling.presence_penalty, "[-2, 2]")->capture_default_str();
  auto* seed = cmd->add_option("--seed", o->seed, "Random seed (default: a random one)");
  cmd->add_option("--stop", o->sampling.stop, "Stop string (repeatable); not included in the output");
  cmd->add_flag("--ignore-eos", o->sampling.ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_option("--threads,-t", o->threads, "Worker threads (0 = one per core)")->capture_default_str();
  cmd->add_flag(
      "--mmap", o->mmap,
      "Map the model file instead of reading it into memory (faster start, shared page cache; decode a few % slower)");
  cmd->add_option("--block-size", o->block_size, "KV cache block size in tokens")->capture_default_str();
  add_device_options(cmd, o->device, o->device_flags);
  cmd->add_flag("--no-bos", o->no_bos, "Do not add the BOS token to the prompt");
  cmd->add_flag("--json", o->json, "Print one JSON object {prompt_token_ids, output_token_ids, text} at the end");
  cmd->add_option("--logprobs", o->logprobs, "With --json: the K most likely tokens at each position (0-20)");
  return {cmd, [o, seed] { return run_generate(*o, seed->count() > 0); }};
}

}  // namespace pagoda::cli
