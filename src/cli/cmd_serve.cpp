// `pagoda serve`: the OpenAI-compatible HTTP server (src/server) in front of
// one engine. Prints where it listens (the real port when --port 0) and an
// example curl line, then loads the model while /health already answers 503.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "cli/load_engine.h"
#include "cli/model_option.h"
#include "engine/engine.h"
#include "events/zmq_publisher.h"
#include "pagoda_version.h"
#include "server/cors.h"
#include "server/server.h"
#include "server/tool_parser_choice.h"
#include "util/error.h"

namespace pagoda::cli {
namespace {

// Exit codes of `serve` beyond 0, 1 and 2 (docs/operations.md#shutdown).
constexpr int kExitStuckStep = 3;   // a step still stuck after the shutdown deadline
constexpr int kExitDeviceLost = 4;  // the device was lost (DeviceLost): every request ended; restart

struct ServeOpts {
  ModelOption model_opt;
  std::string model;  // model_opt, resolved
  std::vector<std::string> served_names;
  std::string allowed_origins;
  std::string chat_template;
  std::string tool_call_parser = "auto";
  std::string reasoning_parser = "auto";
  std::string faults;
  std::string kv_events;     // --kv-events-config JSON
  DeviceFlags device_flags;  // --kv-type, --enforce-eager
  std::string max_step_ms = "auto";
  std::string pooling;  // --pooling; empty: the file's
  bool no_paged = false, no_prefix = false, no_hybrid = false;
  bool api_key_given = false;
  bool no_dashboard = false;
  double kv_mem_mib = 0;
  server::ServerConfig server;
  EngineConfig engine;
};

// Thousands of connections need thousands of descriptors: take the hard limit.
void raise_open_files_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) spdlog::warn("cannot raise the open-files limit");
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 4096) spdlog::warn("the open-files limit is {}: few concurrent connections fit", lim.rlim_cur);
}

// Logs the model load's progress, at most a line a second (none for a load
// under a second: the "loaded in" line says enough).
LoadProgress progress_log(const std::string& name) {
  using clock = std::chrono::steady_clock;
  auto last = std::make_shared<clock::time_point>(clock::now());
  return [name, last](const char* stage, uint64_t done, uint64_t total) {
    const auto now = clock::now();
    if (now - *last < std::chrono::seconds(1)) return;
    *last = now;
    spdlog::info("loading model '{}': {} {:.0f} of {:.0f} MiB ({:.0f}%)", name, stage, double(done) / (1 << 20),
                 double(total) / (1 << 20), total ? 100.0 * double(done) / double(total) : 100.0);
  };
}

int run_serve(ServeOpts& o) {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished client is an error code, not a signal
  raise_open_files_limit();
  EngineConfig cfg = o.engine;
  cfg.paged = !o.no_paged;
  cfg.hybrid_kv_cache = !o.no_hybrid;
  cfg.prefix_caching = !o.no_prefix;
  o.server.dashboard = !o.no_dashboard;
  cfg.snapshot_interval_s = o.server.dashboard ? 0.25 : 0;  // the dashboard's pace (snapshot.h)
  cfg.kv_cache_mem_mib = int64_t(o.kv_mem_mib);
  if (!o.pooling.empty()) cfg.pooling = pooling_from_name(o.pooling);
  parse_max_step_ms(o.max_step_ms, cfg.sched);
  if (!o.faults.empty()) cfg.faults = FaultSpec::parse(o.faults);
  const events::KvEventsConfig kv_events_config =
      o.kv_events.empty() ? events::KvEventsConfig{} : events::parse_kv_events_config(o.kv_events);
  if (cfg.block_size < 1 || cfg.block_size > 1024) fail<InvalidArgument>("--block-size must be in [1, 1024]");
  if (o.api_key_given && o.server.api_key.empty())
    fail<InvalidArgument>("--api-key is empty: give a key, or leave the flag out to serve without authentication");
  if (o.server.api_key.empty())
    if (const char* k = std::getenv("PAGODA_API_KEY"); k && *k) o.server.api_key = k;
  o.model = o.model_opt.resolve();
  if (!std::filesystem::exists(o.model)) fail<InvalidArgument>("model file not found: {}", o.model);
  // vLLM's --served-model-name: requests may use any of the names; responses say the first.
  if (o.served_names.empty()) o.served_names.push_back(std::filesystem::path(o.model).stem().string());
  const std::string name = o.served_names.front();
  o.server.allowed_origins = server::parse_allowed_origins(o.allowed_origins);
  o.server.version = PAGODA_VERSION;
  std::optional<std::string> tmpl;
  if (!o.chat_template.empty()) tmpl = o.chat_template;
  // A --chat-template that is neither a file nor a name fails before listening; a template
  // that does not parse is logged, and the server still serves completions.
  auto chat = server::ChatPrompt::for_model(o.model, tmpl);
  spdlog::info("chat template: {} ({})", chat.name(), chat.source());
  if (!chat.error().empty()) spdlog::error("chat template unusable, chat requests will be refused: {}", chat.error());
  const server::ToolParserChoice tool_parser = server::choose_tool_parser(o.tool_call_parser, o.model, tmpl);
  spdlog::info("tool-call parser: {}", tool_parser.how);
  const server::ReasoningParserChoice reasoning =
      server::choose_reasoning_parser(o.reasoning_parser, o.model, tmpl, tool_parser.format);
  spdlog::info("reasoning parser: {}", reasoning.how);

  // KV events: an endpoint that cannot bind fails here, before listening.
  std::shared_ptr<events::ZmqKvEventPublisher> kv_events;
  if (kv_events_config.enabled())
    kv_events = std::make_shared<events::ZmqKvEventPublisher>(kv_events_config, cfg.block_size);
  server::Server srv(o.server);
  const uint16_t port = srv.listen();
  const std::string host = o.server.host.find(':') != std::string::npos ? "[" + o.server.host + "]" : o.server.host;
  std::printf("Pagoda listening on http://%s:%u (model %s; loading it: /health is 503 until it is ready)\n",
              host.c_str(), unsigned(port), name.c_str());
  std::printf(
      "  curl http://%s:%u/v1/completions -H 'Content-Type: application/json'%s -d '{\"model\": \"%s\", "
      "\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n",
      host.c_str(), unsigned(port), o.server.api_key.empty() ? "" : " -H \"Authorization: Bearer $PAGODA_API_KEY\"",
      name.c_str());
  std::fflush(stdout);
  cfg.load_progress = progress_log(name);
  const bool clean = srv.run([&] {
    auto m = std::make_unique<server::ServedModel>(load_engine(o.model, cfg, o.device_flags), name, chat);
    m->names = o.served_names;
    m->limits.tool_parser = tool_parser.format;
    m->limits.reasoning_parser = reasoning.format;
    if (kv_events) {
      m->engine->set_kv_event_sink(kv_events);
      m->extra_metrics = [kv_events](std::string& out) { kv_events->render_metrics(out); };
    }
    return m;
  });
  if (!clean) {
    // A stuck step still runs on the engine thread: exit without the
    // destructors it could race with.
    spdlog::shutdown();
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kExitStuckStep);
  }
  // Every request ended with an error already; a supervisor restarts the server. Exit
  // at once: a GPU's runtime, torn down at exit, could wait on a hung kernel.
  if (srv.device_lost()) {
    spdlog::shutdown();
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(kExitDeviceLost);
  }
  return 0;
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  auto& s = o->server;
  auto& e = o->engine;
  o->model_opt.add(cmd);
  cmd->add_option("--host", s.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", s.port, "Port (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--served-model-name", o->served_names,
                  "Model names requests may use; responses say the first (default: the file name's stem)")
      ->expected(1, 16);
  cmd->add_option("--allowed-origins", o->allowed_origins,
                  "Browser origins that get CORS headers: a comma list or '*' (default: none, no CORS headers)");
  cmd->add_option("--kv-cache-tokens", e.kv_cache_tokens, "KV pool size in tokens (default: sized from memory)");
  cmd->add_option("--kv-cache-mem", o->kv_mem_mib, "KV pool size in MiB");
  cmd->add_option("--block-size", e.block_size, "KV cache block size in tokens")->capture_default_str();
  cmd->add_option("--state-slots", e.state_slots,
                  "Recurrent-state slots of a hybrid model (Qwen3.5): most sequences running at once "
                  "(default: --max-num-seqs, within the memory left)");
  cmd->add_option("--state-checkpoints", e.state_checkpoints,
                  "Prefix caching of a hybrid model: how many prompt-prefix states to keep (-1: one per state slot; "
                  "0: none, prefix caching off)")
      ->capture_default_str();
  cmd->add_option("--state-checkpoint-interval", e.state_checkpoint_interval,
                  "Tokens between a hybrid prompt's state checkpoints (also taken at its last block boundaries)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--pooling", o->pooling,
                  "Serve as an embedding model (/v1/embeddings only), pooling the final hidden states: none, mean, "
                  "cls, last, or rank (a reranker with a classification head, /v1/rerank) (default: the file's "
                  "pooling_type; none for a generating model)");
  add_device_options(cmd, e, o->device_flags);
  cmd->add_option("--max-num-seqs", e.sched.max_num_seqs, "Most sequences in a batch")->capture_default_str();
  cmd->add_option("--max-batched-tokens", e.sched.max_batched_tokens, "Most tokens in a step")->capture_default_str();
  cmd->add_option("--max-step-ms", o->max_step_ms,
                  "Target step time while streams decode: milliseconds, 'auto' (2x the decode step), a multiple "
                  "such as '2.5x', or 0 (the token budget alone)")
      ->capture_default_str();
  cmd->add_option("--long-prefill-token-threshold", e.sched.long_prefill_token_threshold,
                  "Most prompt tokens one request computes in a step (0: no cap)")
      ->capture_default_str();
  cmd->add_option("--max-bypass", e.sched.max_bypass, "How often a waiting request may be passed")
      ->capture_default_str();
  cmd->add_option("--kv-watermark", e.sched.kv_watermark, "Share of the KV pool kept free when admitting (paged mode)")
      ->capture_default_str();
  cmd->add_option("--kv-headroom-per-seq", e.sched.kv_headroom_per_seq,
                  "KV blocks kept free per running sequence when admitting (paged mode)")
      ->capture_default_str();
  cmd->add_option("--max-waiting", e.max_waiting, "Waiting-queue bound; beyond it requests get 429")
      ->capture_default_str();
  cmd->add_flag("--no-paged-attn", o->no_paged, "Reserve whole contexts instead of paging the KV cache");
  cmd->add_flag("--no-prefix-caching", o->no_prefix, "Do not reuse KV blocks across requests");
  cmd->add_flag("--disable-hybrid-kv-cache-manager", o->no_hybrid,
                "Keep every block in every layer (sliding-window layers give nothing back)");
  cmd->add_option("--max-model-len", e.max_model_len, "Most tokens per sequence (0: the model's context)")
      ->capture_default_str();
  cmd->add_option("--request-timeout", e.request_timeout_s, "Seconds a request may take in all")->capture_default_str();
  cmd->add_option("--write-timeout", s.write_timeout_s, "Seconds a client may accept no bytes before it is dropped")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", s.shutdown_timeout_s,
                  "On SIGINT/SIGTERM, seconds in-flight requests may finish")
      ->capture_default_str();
  cmd->add_option("--keep-alive-timeout", s.keep_alive_timeout_s, "Seconds an idle connection stays open")
      ->capture_default_str();
  cmd->add_option("--header-timeout", s.header_timeout_s,
                  "Seconds a request's headers may take from their first byte (408)")
      ->capture_default_str();
  cmd->add_option("--body-timeout", s.body_timeout_s, "Seconds a request body may bring no byte (408)")
      ->capture_default_str();
  cmd->add_option("--max-connections", s.max_connections,
                  "Most open connections; beyond it 503 (0: from the open-files limit)")
      ->capture_default_str();
  cmd->add_option("--request-workers", s.request_workers, "Threads that parse and tokenize requests")
      ->capture_default_str();
  cmd->add_option("--stall-min-ms", s.stall_min_ms, "/health: no step is a stall before this many ms")
      ->capture_default_str();
  cmd->add_option("--stall-factor", s.stall_factor,
                  "/health: a step is a stall past this many times its predicted time")
      ->capture_default_str();
  cmd->add_option("--stall-timeout", s.stall_timeout_s,
                  "/health: limit in seconds for a step of a size not seen before")
      ->capture_default_str();
  cmd->add_option("--max-body-size", s.max_body_bytes, "Largest request body in bytes (413 beyond)")
      ->capture_default_str();
  cmd->add_option("--api-key", s.api_key,
                  "Require 'Authorization: Bearer KEY' or 'x-api-key: KEY' on /v1 (also $PAGODA_API_KEY)")
      ->each([o](const std::string&) { o->api_key_given = true; });
  cmd->add_option("--chat-template", o->chat_template,
                  "Chat template: a Jinja file or a built-in name (default: the model file's)");
  cmd->add_option("--tool-call-parser", o->tool_call_parser,
                  "Tool-call format of the model's output: auto (from the chat template), hermes, llama3_json, "
                  "pythonic, mistral, deepseek_v3, openai (gpt-oss's harmony, reasoning apart) or gemma4")
      ->capture_default_str();
  cmd->add_option("--reasoning-parser", o->reasoning_parser,
                  "Reasoning in <think> tags (Gemma 4's <|channel>thought), returned apart as reasoning_content: auto "
                  "(from the chat template), qwen3, deepseek_r1, gemma4 or none")
      ->capture_default_str();
  cmd->add_option("--threads,-t", e.threads, "Worker threads (0 = one per core)")->capture_default_str();
  cmd->add_flag("--mmap", e.mmap,
                "Serve from the model file's map only (by default it serves from the map at once and moves the weights "
                "into memory and row panels in the background; decode a few % slower without)");
  cmd->add_option("--io-threads", s.io_threads, "Threads running the HTTP event loop")->capture_default_str();
  cmd->add_option("--inject-faults", o->faults,
                  "Fault injection, e.g. forward=0.05,oom=0.02,poison=0.01,slow=0.1,slow_ms=200,seed=7");
  cmd->add_flag("--no-dashboard", o->no_dashboard,
                "Serve no dashboard: no page at /, no /debug/state or /debug/events");
  cmd->add_option("--kv-events-config", o->kv_events,
                  "KV-cache events for prefix-aware routers (llm-d, Dynamo), as vLLM's JSON, e.g. "
                  "'{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\", "
                  "\"topic\": \"kv@pod@model\", \"replay_endpoint\": \"tcp://*:5558\"}' (default: off)");
  cmd->add_flag("--audit-every-step", e.audit_every_step, "Check every KV block after each step (slow; for tests)");
  cmd->add_option("--log-interval", e.log_interval_s, "Seconds between throughput logs (0: off)")
      ->capture_default_str();
  return {cmd, [o] { return run_serve(*o); }};
}

}  // namespace pagoda::cli
