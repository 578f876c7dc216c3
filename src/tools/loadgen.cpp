#include "tools/loadgen.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>

#include "util/error.h"

namespace pagoda::tools {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using nlohmann::json;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

const std::vector<std::string> kPrompts = {"Once upon a time",
                                           "The little dog",
                                           "Lily and Tom went to the park",
                                           "One day, a big bird",
                                           "There was a girl who loved to sing",
                                           "The sun was shining and"};

enum class Kind { normal, bad, hangup_waiting, hangup_streaming };

// Connects refused in a row (none accepted between) that mean the server is gone.
constexpr int kRefusalsMeaningGone = 8;

struct Shared {
  Shared(const LoadgenConfig& c, tcp::endpoint e) : cfg(c), endpoint(e) {}
  const LoadgenConfig& cfg;
  tcp::endpoint endpoint;
  std::string model;
  double t0 = 0, deadline = 0;
  int64_t open_streams = 0;
  int refused_in_a_row = 0;  // connects refused since the last accepted one
  LoadgenReport report;
  PoissonArrivals arrivals{cfg.request_rate, cfg.seed};
  PromptFit fit;  // words per prompt token, fitted on the server when prompt_tokens is set
  std::vector<RequestTiming> timings;
  std::vector<double> ttft, itl, e2e, queue, prompt_each;

  // The next request's arrival time (now in a closed loop), or none once the run is over.
  std::optional<double> claim() {
    if (report.requests >= cfg.requests || report.server_gone) return std::nullopt;
    const double at = std::isinf(cfg.request_rate) ? now() : t0 + arrivals.next();
    if (at >= deadline) return std::nullopt;
    ++report.requests;
    return at;
  }
  void sample(std::string s) {
    if (report.samples.size() < 8) report.samples.push_back(std::move(s));
  }
};

// Requests that every OpenAI-compatible server must refuse with a 4xx.
std::string bad_body(std::mt19937_64& rng, const std::string& model, bool chat) {
  const std::string input =
      chat ? R"("messages": [{"role": "user", "content": "Hi"}])" : R"("prompt": "Once upon a time")";
  const std::string m = model.empty() ? "" : fmt::format(R"("model": "{}", )", model);
  switch (rng() % 6) {
    case 0: return fmt::format(R"({{{}{}, "max_tokens": )", m, input);  // truncated JSON
    case 1: return fmt::format(R"({{{}{}, "temperature": "hot"}})", m, input);
    case 2: return fmt::format(R"({{{}{}, "top_p": 7}})", m, input);
    case 3: return fmt::format(R"({{{}{}, "max_tokens": -3}})", m, input);
    case 4: return fmt::format(R"({{{}"max_tokens": 4}})", m);  // no prompt / messages
    default: return fmt::format(R"({{{}{}, "n": 0}})", m, input);
  }
}

json request_json(const Shared& sh, const std::string& prompt, int max_tokens, bool stream) {
  const auto& c = sh.cfg;
  json j = {{"max_tokens", max_tokens}, {"temperature", c.temperature}, {"stream", stream}};
  if (!sh.model.empty()) j["model"] = sh.model;
  if (c.chat)
    j["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
  else
    j["prompt"] = prompt;
  if (stream) j["stream_options"] = {{"include_usage", true}};
  if (c.ignore_eos) j["ignore_eos"] = true;
  for (const auto& [k, v] : c.body_extra.items()) j[k] = v;
  return j;
}

std::string good_body(std::mt19937_64& rng, const Shared& sh) {
  const auto& c = sh.cfg;
  const auto& prompts = c.prompts.empty() ? kPrompts : c.prompts;
  const std::string prompt = c.prompt_tokens.empty() ? prompts[rng() % prompts.size()]
                                                     : word_prompt(sh.fit.words_for(c.prompt_tokens.draw(rng)), rng);
  const int max_tokens = c.output_tokens.empty() ? c.max_tokens : c.output_tokens.draw(rng);
  return request_json(sh, prompt, max_tokens, c.stream).dump();
}

// One simulated user: requests one after another on a kept-alive connection.
class Client {
 public:
  Client(Shared& sh, uint64_t seed) : sh_(sh), rng_(seed) {}

  asio::awaitable<void> run() {
    while (const auto at = sh_.claim()) {
      if (*at > now()) {
        asio::steady_timer t(co_await asio::this_coro::executor);
        t.expires_after(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(*at - now())));
        co_await t.async_wait(use_tuple);
      }
      co_await one(draw(), *at);
    }
    close();
  }

 private:
  Kind draw() {
    std::uniform_real_distribution<double> u(0, 1);
    const double x = u(rng_);
    if (x < sh_.cfg.bad_fraction) return Kind::bad;
    if (x < sh_.cfg.bad_fraction + sh_.cfg.hangup_fraction)
      return (!sh_.cfg.stream || u(rng_) < sh_.cfg.hangup_waiting_share) ? Kind::hangup_waiting
                                                                         : Kind::hangup_streaming;
    return Kind::normal;
  }

  void close() {
    if (!sock_) return;
    error_code ec;
    sock_->close(ec);
    sock_.reset();
    buf_.clear();
  }

  asio::awaitable<bool> connect() {
    close();
    sock_ = std::make_shared<tcp::socket>(co_await asio::this_coro::executor);
    auto [ec] = co_await sock_->async_connect(sh_.endpoint, use_tuple);
    if (ec) {
      sh_.sample("connect: " + ec.message());
      close();
      // A server that has exited refuses every connect: stop at once rather than
      // spend the rest of the run (or --duration) on refusals.
      if (ec == asio::error::connection_refused && ++sh_.refused_in_a_row >= kRefusalsMeaningGone)
        sh_.report.server_gone = true;
      co_return false;
    }
    sh_.refused_in_a_row = 0;
    sock_->set_option(tcp::no_delay(true), ec);
    co_return true;
  }

  // What one response brought: its body, or its stream's events so far.
  struct Tally {
    std::string body, pending;  // pending: stream bytes not yet a whole event
    bool done = false, stream_error = false;
    int events = 0;
    int64_t tokens = 0, usage_tokens = -1, usage_prompt = -1;
    double first = 0, last = 0;  // when the first and the last token arrived
    std::vector<double> gaps;    // ms between tokens
    double queued_ms = 0;        // arrival to send: every client was busy
  };

  http::request<http::string_body> make_request(Kind kind) {
    const auto& cfg = sh_.cfg;
    http::request<http::string_body> req{http::verb::post, cfg.chat ? "/v1/chat/completions" : "/v1/completions", 11};
    req.set(http::field::host, sh_.endpoint.address().to_string());
    req.set(http::field::content_type, "application/json");
    if (!cfg.api_key.empty()) req.set(http::field::authorization, "Bearer " + cfg.api_key);
    req.body() = kind == Kind::bad ? bad_body(rng_, sh_.model, cfg.chat) : good_body(rng_, sh_);
    req.prepare_payload();
    return req;
  }

  // A kept-alive connection may have been closed by the server meanwhile: one retry on a fresh one.
  // *reused: whether the request went out on a connection an earlier request used.
  asio::awaitable<bool> send(const http::request<http::string_body>& req, bool* reused_out) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = sock_ != nullptr;
      if (!sock_ && !(co_await connect())) co_return false;
      auto [ec, n] = co_await http::async_write(*sock_, req, use_tuple);
      *reused_out = reused;
      if (!ec) co_return true;
      close();
      if (!reused) {
        sh_.sample("write: " + ec.message());
        co_return false;
      }
    }
    co_return false;
  }

  // Takes the whole events out of t.pending; false once it is time to hang up.
  bool take_events(Tally& t, int hang_after) {
    for (size_t end; (end = t.pending.find("\n\n")) != std::string::npos;) {
      const std::string event = t.pending.substr(0, end);
      t.pending.erase(0, end + 2);
      if (!event.starts_with("data: ")) continue;
      const std::string data = event.substr(6);
      if (data == "[DONE]") {
        t.done = true;
        continue;
      }
      const json j = json::parse(data, nullptr, false);
      if (j.is_discarded() || j.contains("error")) {
        t.stream_error = true;
        sh_.sample("stream: " + data.substr(0, 300));
        continue;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        t.usage_tokens = j["usage"].value("completion_tokens", int64_t(0));
        t.usage_prompt = j["usage"].value("prompt_tokens", int64_t(-1));
      }
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const json& ch = j["choices"][0];
      std::string text;
      if (ch.contains("text") && ch["text"].is_string()) text = ch["text"];
      if (ch.contains("delta") && ch["delta"].contains("content") && ch["delta"]["content"].is_string())
        text = ch["delta"]["content"];
      if (text.empty()) continue;
      const double now_s = now();
      if (t.tokens == 0)
        t.first = now_s;
      else
        t.gaps.push_back((now_s - t.last) * 1e3);
      t.last = now_s;
      ++t.tokens;
      if (++t.events == hang_after) return false;
    }
    return true;
  }

  // Counts a finished exchange by what was sent and what came back.
  void record(Kind kind, int status, bool sse, const Tally& t, const std::string& sent, double start) {
    auto& r = sh_.report;
    if (status == 200 && kind == Kind::bad) {
      ++r.bad_accepted;
      sh_.sample("a bad request got 200: " + sent.substr(0, 200));
    } else if (status >= 400 && status < 500 && kind == Kind::bad) {
      ++r.bad_rejected;
    } else if (status == 429) {
      ++r.rejected_429;
    } else if (status >= 400 && status < 500) {
      ++r.http_4xx;
      sh_.sample(fmt::format("HTTP {}: {}", status, t.body.substr(0, 300)));
    } else if (status != 200) {
      ++r.http_5xx;
      sh_.sample(fmt::format("HTTP {}: {}", status, t.body.substr(0, 300)));
    } else if (sse) {
      if (t.stream_error) {
        ++r.stream_errors;
      } else if (!t.done) {
        ++r.transport_errors;
        sh_.sample("a stream ended without [DONE]");
      } else {
        completed(t.usage_tokens >= 0 ? t.usage_tokens : t.tokens, t.usage_prompt, t, start);
      }
    } else {
      const json j = json::parse(t.body, nullptr, false);
      if (j.is_discarded() || !j.contains("choices")) {
        ++r.transport_errors;
        sh_.sample("a response that is not a completion: " + t.body.substr(0, 300));
      } else {
        const json u = j.value("usage", json::object());
        completed(u.value("completion_tokens", int64_t(0)), u.value("prompt_tokens", int64_t(-1)), t, start);
      }
    }
  }

  // A completed request's figures (TTFT and gaps: streams with a token only).
  void completed(int64_t output_tokens, int64_t prompt_tokens, const Tally& t, double start) {
    auto& r = sh_.report;
    ++r.ok;
    r.completion_tokens += output_tokens;
    if (prompt_tokens >= 0) {
      r.prompt_tokens += prompt_tokens;
      sh_.prompt_each.push_back(double(prompt_tokens));
    }
    // A whole (not streamed) response brings its first token with its last.
    const double end = t.tokens > 0 ? t.last : now(), first = t.tokens > 0 ? t.first : end;
    sh_.e2e.push_back((end - start) * 1e3);
    sh_.queue.push_back(t.queued_ms);
    RequestTiming rt{(first - start) * 1e3, (end - start) * 1e3, 0, output_tokens};
    for (double g : t.gaps) rt.max_itl_ms = std::max(rt.max_itl_ms, g);
    sh_.ttft.push_back(rt.ttft_ms);
    sh_.itl.insert(sh_.itl.end(), t.gaps.begin(), t.gaps.end());
    sh_.timings.push_back(rt);
  }

  // `start` is the request's arrival: a wait for a free client counts in its latencies.
  asio::awaitable<void> one(Kind kind, double start) {
    auto& r = sh_.report;
    const auto& cfg = sh_.cfg;
    const double queued_ms = (now() - start) * 1e3;
    const auto req = make_request(kind);
    if (kind == Kind::bad) ++r.bad_sent;
    bool reused = false;
    if (!(co_await send(req, &reused))) {
      ++r.transport_errors;
      co_return;
    }
    auto sock = std::make_shared<std::shared_ptr<tcp::socket>>(sock_);  // the request's connection, for the timer
    auto timed_out = std::make_shared<bool>(false);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(std::chrono::milliseconds(int64_t(cfg.request_timeout_s * 1000)));
    timer.async_wait([sock, timed_out](error_code ec) {
      if (ec) return;
      *timed_out = true;
      (*sock)->close(ec);
    });
    struct Cancel {
      asio::steady_timer& t;
      ~Cancel() { t.cancel(); }
    } cancel_timer{timer};

    if (kind == Kind::hangup_waiting) {
      asio::steady_timer wait(co_await asio::this_coro::executor);
      wait.expires_after(std::chrono::milliseconds(rng_() % 50));
      co_await wait.async_wait(use_tuple);
      close();
      ++r.hung_up_waiting;
      co_return;
    }

    http::response_parser<http::buffer_body> p;
    p.body_limit(boost::none);
    auto fail_transport = [&](const error_code& ec, const char* where) {
      close();
      if (*timed_out)
        ++r.client_timeouts;
      else {
        ++r.transport_errors;
        sh_.sample(fmt::format("{}: {}", where, ec.message()));
      }
    };
    // A server may close a kept-alive connection as the request goes out on
    // it (llama-server does after some requests): it ends with nothing read,
    // and the request is sent once more on a fresh connection, as HTTP clients do.
    for (;;) {
      auto [ec, n] = co_await http::async_read_header(*sock_, buf_, p, use_tuple);
      if (!ec) break;
      const bool closed_unanswered = ec == http::error::end_of_stream || ec == asio::error::connection_reset;
      if (!reused || *timed_out || !closed_unanswered || buf_.size() > 0) {
        fail_transport(ec, "read header");
        co_return;
      }
      close();
      ++r.resent;
      if (!(co_await send(req, &reused))) {
        ++r.transport_errors;
        co_return;
      }
      *sock = sock_;
    }
    const int status = int(p.get().result_int());
    const bool sse = status == 200 && p.get()[http::field::content_type].starts_with("text/event-stream");
    if (sse) r.max_concurrent_streams = std::max(r.max_concurrent_streams, ++sh_.open_streams);
    struct StreamCount {
      Shared& sh;
      bool on;
      ~StreamCount() {
        if (on) --sh.open_streams;
      }
    } stream_count{sh_, sse};

    // Read the body; events are parsed as they arrive.
    const int hang_after =
        kind == Kind::hangup_streaming ? 1 + int(rng_() % uint64_t(std::max(1, cfg.max_tokens / 2))) : -1;
    Tally t;
    t.queued_ms = queued_ms;
    char chunk[16384];
    while (!p.is_done()) {
      p.get().body().data = chunk;
      p.get().body().size = sizeof chunk;
      auto [ec, n] = co_await http::async_read_some(*sock_, buf_, p, use_tuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        fail_transport(ec, "read body");
        co_return;
      }
      const size_t got = sizeof chunk - p.get().body().size;
      (sse ? t.pending : t.body).append(chunk, got);
      if (sse && !take_events(t, hang_after)) {
        close();
        ++r.hung_up_streaming;
        co_return;
      }
    }
    // A stream meant to be hung up on that ended first counts by what it was.
    if (kind == Kind::hangup_streaming) kind = Kind::normal;
    if (!(p.keep_alive() && (!sse || t.done))) close();
    record(kind, status, sse, t, req.body(), start);
  }

  Shared& sh_;
  std::mt19937_64 rng_;
  std::shared_ptr<tcp::socket> sock_;
  beast::flat_buffer buf_;
};

// One exchange on a connection of its own, before the load: the JSON of a
// 200 response, or discarded JSON.
asio::awaitable<json> exchange(const Shared& sh, http::verb verb, const std::string& target, const std::string& body) {
  tcp::socket s(co_await asio::this_coro::executor);
  const json none = json(json::value_t::discarded);
  if (auto [ec] = co_await s.async_connect(sh.endpoint, use_tuple); ec) co_return none;
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, sh.endpoint.address().to_string());
  if (!sh.cfg.api_key.empty()) req.set(http::field::authorization, "Bearer " + sh.cfg.api_key);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  if (auto [ec, n] = co_await http::async_write(s, req, use_tuple); ec) co_return none;
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  if (auto [ec, n] = co_await http::async_read(s, buf, res, use_tuple); ec || res.result_int() != 200) co_return none;
  co_return json::parse(res.body(), nullptr, false);
}

// The served model's name from GET /v1/models (none if that fails: requests
// then name no model, and the server serves its default).
asio::awaitable<void> discover_model(Shared& sh) {
  const json j = co_await exchange(sh, http::verb::get, "/v1/models", "");
  if (!j.is_discarded() && j.contains("data") && !j["data"].empty() && j["data"][0].contains("id"))
    sh.model = j["data"][0]["id"].get<std::string>();
}

// How many words make a prompt token on this server (template included):
// two probe prompts, one token each asked, and their usage.prompt_tokens.
// One token per word if the server does not say.
asio::awaitable<void> fit_prompts(Shared& sh) {
  std::mt19937_64 rng(sh.cfg.seed ^ 0x9e3779b97f4a7c15ULL);
  int64_t tokens[2] = {-1, -1};
  const int words[2] = {16, 80};
  for (int i = 0; i < 2; ++i) {
    const std::string body = request_json(sh, word_prompt(words[i], rng), 1, false).dump();
    const json j =
        co_await exchange(sh, http::verb::post, sh.cfg.chat ? "/v1/chat/completions" : "/v1/completions", body);
    if (!j.is_discarded() && j.contains("usage") && j["usage"].is_object())
      tokens[i] = j["usage"].value("prompt_tokens", int64_t(-1));
  }
  sh.fit = PromptFit::from_probes(words[0], tokens[0], words[1], tokens[1]);
  if (tokens[0] < 0 || tokens[1] < 0) sh.sample("the prompt-size probes got no usage.prompt_tokens: one token a word");
}

json percentiles_json(const Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}, {"std", p.stddev}, {"count", p.count}};
}

void check(const LoadgenConfig& cfg) {
  if (cfg.clients < 1) fail<InvalidArgument>("--clients must be >= 1");
  if (!cfg.body_extra.is_object()) fail<InvalidArgument>("--body-extra must be a JSON object");
  if (cfg.hangup_fraction < 0 || cfg.bad_fraction < 0 || cfg.hangup_fraction + cfg.bad_fraction > 1)
    fail<InvalidArgument>("--hangup-fraction and --bad-fraction must be >= 0 and add up to at most 1");
  if (!(cfg.request_rate > 0)) fail<InvalidArgument>("--request-rate must be > 0 (or inf)");
  if (cfg.slo.ttft_ms < 0 || cfg.slo.itl_ms < 0 || cfg.slo.tpot_ms < 0)
    fail<InvalidArgument>("--slo-ttft-ms, --slo-itl-ms and --slo-tpot-ms must be >= 0");
}

// Runs the clients to the end; the io_context is fresh or restarted.
void run_clients(asio::io_context& io, Shared& sh) {
  sh.t0 = now();
  sh.deadline = sh.t0 + sh.cfg.duration_s;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < sh.cfg.clients; ++i) {
    clients.push_back(std::make_unique<Client>(sh, sh.cfg.seed * 1000003 + uint64_t(i)));
    asio::co_spawn(io, clients.back()->run(), asio::detached);
  }
  io.run();
}

}  // namespace

LoadgenReport run_loadgen(const LoadgenConfig& cfg) {
  check(cfg);
  error_code ec;
  const auto address = asio::ip::make_address(cfg.host, ec);
  if (ec) fail<InvalidArgument>("--host must be an IP address, got '{}'", cfg.host);
  Shared sh(cfg, tcp::endpoint(address, cfg.port));
  asio::io_context io;
  sh.model = cfg.model;
  auto before = [&](asio::awaitable<void> task) {
    asio::co_spawn(io, std::move(task), asio::detached);
    io.run();
    io.restart();
  };
  if (sh.model.empty()) before(discover_model(sh));
  if (!cfg.prompt_tokens.empty()) before(fit_prompts(sh));
  run_clients(io, sh);
  LoadgenReport r = std::move(sh.report);
  r.duration_s = now() - sh.t0;
  r.request_rate = cfg.request_rate;
  r.clients = cfg.clients;
  r.slo = cfg.slo;
  r.good = count_good(sh.timings, cfg.slo);
  std::vector<double> tpot;
  for (const auto& t : sh.timings) tpot.push_back(tpot_ms(t));
  r.tpot_ms = percentiles(std::move(tpot));
  r.ttft_ms = percentiles(std::move(sh.ttft));
  r.itl_ms = percentiles(std::move(sh.itl));
  r.e2e_ms = percentiles(std::move(sh.e2e));
  r.queue_ms = percentiles(std::move(sh.queue));
  r.prompt_tokens_each = percentiles(std::move(sh.prompt_each));
  return r;
}

json LoadgenReport::to_json() const {
  const double d = std::max(duration_s, 1e-9);
  const json rate = std::isinf(request_rate) ? json("inf") : json(request_rate);
  return {{"requests", requests},
          {"ended", ended()},
          {"server_gone", server_gone},
          {"ok", ok},
          {"hung_up_waiting", hung_up_waiting},
          {"hung_up_streaming", hung_up_streaming},
          {"bad_sent", bad_sent},
          {"bad_rejected", bad_rejected},
          {"bad_accepted", bad_accepted},
          {"rejected_429", rejected_429},
          {"http_4xx", http_4xx},
          {"http_5xx", http_5xx},
          {"stream_errors", stream_errors},
          {"transport_errors", transport_errors},
          {"resent", resent},
          {"client_timeouts", client_timeouts},
          {"completion_tokens", completion_tokens},
          {"prompt_tokens", prompt_tokens},
          {"good", good},
          {"max_concurrent_streams", max_concurrent_streams},
          {"request_rate", rate},
          {"max_concurrency", clients},
          {"slo", {{"ttft_ms", slo.ttft_ms}, {"itl_ms", slo.itl_ms}, {"tpot_ms", slo.tpot_ms}}},
          {"duration_s", duration_s},
          {"requests_per_s", double(ok) / d},
          {"tokens_per_s", double(completion_tokens) / d},
          {"total_tokens_per_s", double(prompt_tokens + completion_tokens) / d},
          {"goodput_requests_per_s", double(good) / d},
          {"ttft_ms", percentiles_json(ttft_ms)},
          {"itl_ms", percentiles_json(itl_ms)},
          {"tpot_ms", percentiles_json(tpot_ms)},
          {"e2e_ms", percentiles_json(e2e_ms)},
          {"queue_ms", percentiles_json(queue_ms)},
          {"prompt_tokens_each", percentiles_json(prompt_tokens_each)},
          {"samples", samples}};
}

std::string LoadgenReport::summary() const {
  const double d = std::max(duration_s, 1e-9);
  std::string s = fmt::format(
      "requests {} in {:.2f} s: ok {}, hung up {} waiting + {} streaming, bad input {} (4xx {}, accepted {}), "
      "429 {}, other 4xx {}, 5xx {}, stream errors {}, transport errors {}, client timeouts {}\n",
      requests, duration_s, ok, hung_up_waiting, hung_up_streaming, bad_sent, bad_rejected, bad_accepted, rejected_429,
      http_4xx, http_5xx, stream_errors, transport_errors, client_timeouts);
  if (resent > 0)
    s += fmt::format("resent on a fresh connection: {} (the server closed a kept-alive one unanswered)\n", resent);
  if (server_gone)
    s += fmt::format("stopped early: the server refused {} connections in a row (it is not running)\n",
                     kRefusalsMeaningGone);
  s += fmt::format(
      "arrivals: {}; at most {} in flight; most concurrent streams {}\n",
      std::isinf(request_rate) ? std::string("closed loop") : fmt::format("Poisson, {} requests/s", request_rate),
      clients, max_concurrent_streams);
  s += fmt::format(
      "throughput: {:.2f} requests/s, {:.1f} output tokens/s, {:.1f} total tokens/s ({} prompt + {} output tokens)\n",
      double(ok) / d, double(completion_tokens) / d, double(prompt_tokens + completion_tokens) / d, prompt_tokens,
      completion_tokens);
  s += fmt::format("goodput: {:.2f} requests/s ({} of {} met {})\n", double(good) / d, good, ok,
                   slo.any() ? fmt::format("TTFT <= {} ms, max ITL <= {} ms, TPOT <= {} ms (0: no bound)", slo.ttft_ms,
                                           slo.itl_ms, slo.tpot_ms)
                             : std::string("no SLO"));
  auto line = [&](const char* name, const Percentiles& p) {
    s += fmt::format("{:<6} ms: p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  mean {:.1f}  std {:.1f}  (n={})\n", name, p.p50,
                     p.p90, p.p99, p.mean, p.stddev, p.count);
  };
  line("TTFT", ttft_ms);
  line("ITL", itl_ms);
  line("TPOT", tpot_ms);
  line("E2E", e2e_ms);
  line("queue", queue_ms);
  if (prompt_tokens_each.count > 0)
    s += fmt::format("prompt tokens each (usage): p50 {:.0f}  p90 {:.0f}  p99 {:.0f}  mean {:.1f}\n",
                     prompt_tokens_each.p50, prompt_tokens_each.p90, prompt_tokens_each.p99, prompt_tokens_each.mean);
  for (const auto& x : samples) s += "  e.g. " + x + "\n";
  return s;
}

}  // namespace pagoda::tools
