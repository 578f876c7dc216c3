// What every connection shares: the configuration, the served model (absent
// while it loads), the counters the engine does not keep, and the registry of
// open connections that a graceful shutdown walks.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <ctime>
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "server/chat_prompt.h"
#include "server/openai_request.h"
#include "server/response_store.h"
#include "server/server_config.h"
#include "server/stall_watch.h"

namespace pagoda::server {

class Connection;

// The model as the server serves it: the engine that runs it, and what the
// server itself needs of the model (its name, tokenizer, chat template and
// the limits requests are checked against).
struct ServedModel {
  ServedModel(std::unique_ptr<Engine> e, std::string model_name, ChatPrompt chat_prompt)
      : engine(std::move(e)),
        name(std::move(model_name)),
        chat(std::move(chat_prompt)),
        tokenizer(*engine->tokenizer()),
        vocab(grammar::TokenVocab::from_tokenizer(tokenizer)),
        limits{&tokenizer, engine->max_model_len(), engine->config().max_n, {&grammars, vocab}, std::nullopt} {
    limits.pooling = engine->pooling();
    limits.output_width = engine->output_width();
  }

  std::unique_ptr<Engine> engine;
  std::string name;                      // what responses call it (the first served name)
  std::vector<std::string> names{name};  // every name requests may give it; /v1/models lists them
  ChatPrompt chat;
  const Tokenizer& tokenizer;  // prompts in, logprobs out
  // Constrained decoding: compiled grammars by content, shared by every request.
  mutable grammar::GrammarCache grammars;
  std::shared_ptr<const grammar::TokenVocab> vocab;  // the tokenizer's bytes, for token masks
  ModelLimits limits;
  std::function<void(std::string&)> extra_metrics;  // more /metrics series (the KV event publisher's)
};

class ServerState {
 public:
  explicit ServerState(ServerConfig config)
      : config(std::move(config)),
        stall(StallRule{this->config.stall_min_ms / 1000, this->config.stall_factor, this->config.stall_timeout_s}),
        workers(size_t(std::max(1, this->config.request_workers))) {}

  const ServerConfig config;
  const int64_t started_at = int64_t(std::time(nullptr));  // /v1/models' `created`
  StallWatch stall;
  std::atomic<bool> draining{false};           // shutting down: no new requests
  std::atomic<int64_t> rejected{0};            // 429s from backpressure
  std::atomic<int64_t> active_generations{0};  // submitted, response not finished
  std::atomic<int> dashboard_streams{0};       // open /debug/events streams
  boost::asio::thread_pool workers;            // parse and tokenize generation requests
  ResponseStore responses;                     // /v1/responses kept for previous_response_id and GET

  // Null until the model has loaded.
  const ServedModel* model() const { return model_.load(std::memory_order_acquire); }
  void set_model(std::unique_ptr<ServedModel> m) {
    owned_ = std::move(m);
    model_.store(owned_.get(), std::memory_order_release);
  }
  // Destroys the engine (after the I/O threads stopped).
  void release_model() {
    model_.store(nullptr);
    owned_.reset();
  }
  // Leaves the model and its stuck engine thread as they are: the process
  // exits without waiting on them.
  void abandon_model() {
    model_.store(nullptr);
    (void)owned_.release();
  }

  void add_connection(Connection* c, std::weak_ptr<Connection> w) {
    std::lock_guard lock(mu_);
    conns_.emplace(c, std::move(w));
  }
  void remove_connection(Connection* c) {
    std::lock_guard lock(mu_);
    conns_.erase(c);
  }
  size_t num_connections() const {
    std::lock_guard lock(mu_);
    return conns_.size();
  }
  void for_each_connection(const std::function<void(std::shared_ptr<Connection>)>& f) {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard lock(mu_);
      for (auto& [_, w] : conns_)
        if (auto c = w.lock()) live.push_back(std::move(c));
    }
    for (auto& c : live) f(std::move(c));
  }

 private:
  std::atomic<const ServedModel*> model_{nullptr};
  std::unique_ptr<ServedModel> owned_;
  mutable std::mutex mu_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns_;
};

}  // namespace pagoda::server
