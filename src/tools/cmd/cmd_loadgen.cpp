// `pagoda loadgen`: drives an OpenAI-compatible server (Pagoda's or another)
// with concurrent clients (closed loop) or Poisson arrivals (--request-rate)
// and prints throughput, goodput and latency percentiles; with --json, one
// JSON object instead (for scripts and tests). Exit code 0 when every request
// ended in a category (see loadgen.h), whatever the category.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tools/cmd/commands.h"
#include "tools/loadgen.h"
#include "util/error.h"

namespace pagoda::tools {
using cli::Command;

namespace {
// --body-extra: JSON text, or @FILE holding it.
nlohmann::json parse_body_extra(const std::string& arg) {
  std::string text = arg;
  if (!arg.empty() && arg[0] == '@') {
    std::ifstream f(arg.substr(1));
    if (!f) fail<InvalidArgument>("--body-extra: cannot read {}", arg.substr(1));
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) fail<InvalidArgument>("--body-extra must be a JSON object");
  return j;
}
}  // namespace

Command add_loadgen(CLI::App& app) {
  auto c = std::make_shared<LoadgenConfig>();
  auto json = std::make_shared<bool>(false);
  struct Texts {
    std::string rate = "inf", prompt_tokens, output_tokens, body_extra;
  };
  auto t = std::make_shared<Texts>();
  auto* cmd = app.add_subcommand("loadgen", "Load-test an OpenAI-compatible server (throughput, TTFT, ITL)");
  cmd->add_option("--host", c->host, "Server IP address")->capture_default_str();
  cmd->add_option("--port", c->port, "Server port")->capture_default_str();
  cmd->add_option("--api-key", c->api_key, "Bearer token to send");
  cmd->add_option("--model", c->model, "Model name to send (default: the first of GET /v1/models)");
  cmd->add_flag("--chat", c->chat, "Use /v1/chat/completions instead of /v1/completions");
  cmd->add_flag("!--no-stream", c->stream, "Ask for whole responses instead of streams");
  cmd->add_option("-c,--clients", c->clients,
                  "Concurrent clients; with --request-rate, the most requests in flight (more arrivals wait)")
      ->capture_default_str();
  cmd->add_option("--request-rate", t->rate,
                  "Poisson arrivals, requests/s (seeded by --seed); inf: closed loop, each client sends when done")
      ->capture_default_str();
  cmd->add_option(
      "--prompt-tokens", t->prompt_tokens,
      "A:B: prompts of about A..B tokens (uniform; word prompts fitted on the server), instead of --prompt");
  cmd->add_option("--output-tokens", t->output_tokens,
                  "A:B: max_tokens drawn uniformly from A..B (with --ignore-eos: "
                  "exactly that many tokens), instead of --max-tokens");
  cmd->add_option("--slo-ttft-ms", c->slo.ttft_ms, "Goodput: time to first token at most this (0: no bound)")
      ->capture_default_str();
  cmd->add_option("--slo-itl-ms", c->slo.itl_ms, "Goodput: every gap between a request's tokens at most this")
      ->capture_default_str();
  cmd->add_option("--slo-tpot-ms", c->slo.tpot_ms, "Goodput: a request's mean time per output token at most this")
      ->capture_default_str();
  cmd->add_option("-n,--requests", c->requests, "Total requests")->capture_default_str();
  cmd->add_option("--duration", c->duration_s, "Seconds after which no new request starts")->capture_default_str();
  cmd->add_option("--max-tokens", c->max_tokens, "max_tokens of each request")->capture_default_str();
  cmd->add_flag("--ignore-eos", c->ignore_eos, "Send ignore_eos (vLLM/Pagoda extension): always max_tokens tokens");
  cmd->add_option("--temperature", c->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--prompt", c->prompts, "Prompt (repeatable; default: built-in story openings)");
  cmd->add_option("--hangup-fraction", c->hangup_fraction, "Share of requests whose client hangs up")
      ->capture_default_str();
  cmd->add_option("--hangup-waiting-share", c->hangup_waiting_share,
                  "Share of those hang-ups that happen before the response starts (the rest: mid-stream)")
      ->capture_default_str();
  cmd->add_option("--bad-fraction", c->bad_fraction, "Share of requests with invalid input (expect 4xx)")
      ->capture_default_str();
  cmd->add_option("--request-timeout", c->request_timeout_s, "Client-side limit per request, seconds")
      ->capture_default_str();
  cmd->add_option("--body-extra", t->body_extra,
                  "A JSON object merged into every valid request body, e.g. "
                  "'{\"response_format\":{\"type\":\"json_object\"}}' (@FILE: read it from FILE)");
  cmd->add_option("--seed", c->seed, "Seed of the clients' random choices")->capture_default_str();
  cmd->add_flag("--json", *json, "Print one JSON object");
  return {cmd, [c, json, t] {
            c->request_rate = parse_request_rate(t->rate);
            if (!t->prompt_tokens.empty()) c->prompt_tokens = parse_token_range(t->prompt_tokens, "--prompt-tokens");
            if (!t->output_tokens.empty()) c->output_tokens = parse_token_range(t->output_tokens, "--output-tokens");
            if (!t->body_extra.empty()) c->body_extra = parse_body_extra(t->body_extra);
            const LoadgenReport r = run_loadgen(*c);
            if (*json)
              std::puts(r.to_json().dump(2).c_str());
            else
              std::fputs(r.summary().c_str(), stdout);
            return r.ended() == r.requests && !r.server_gone ? 0 : 1;
          }};
}

}  // namespace pagoda::tools
