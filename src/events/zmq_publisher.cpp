#include "events/zmq_publisher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <zmq.hpp>

#include "events/kv_event_encoding.h"
#include "util/error.h"

namespace pagoda::events {
namespace {

std::string be64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((v >> (56 - 8 * i)) & 0xff);
  return s;
}

// vLLM's rule: bind a wildcard address or a local transport, connect to anything else.
bool binds(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

}  // namespace

struct ZmqKvEventPublisher::Sockets {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
};

ZmqKvEventPublisher::ZmqKvEventPublisher(const KvEventsConfig& config, int32_t block_size)
    : config_(config), block_size_(block_size), sockets_(std::make_unique<Sockets>()) {
  auto& s = *sockets_;
  // The replay socket binds first: a PUB socket that connects takes an
  // ephemeral port, which could be the replay port.
  if (!config.replay_endpoint.empty()) {
    s.replay.emplace(s.ctx, zmq::socket_type::router);
    s.replay->set(zmq::sockopt::linger, 0);
    try {
      s.replay->bind(config.replay_endpoint);
    } catch (const zmq::error_t& e) {
      fail<InvalidArgument>("--kv-events-config: cannot bind replay_endpoint {}: {}", config.replay_endpoint, e.what());
    }
  }
  s.pub.set(zmq::sockopt::sndhwm, int(config.hwm));
  s.pub.set(zmq::sockopt::linger, 0);
  const bool bind = binds(config.endpoint);
  try {
    if (bind)
      s.pub.bind(config.endpoint);
    else
      s.pub.connect(config.endpoint);
  } catch (const zmq::error_t& e) {
    fail<InvalidArgument>("--kv-events-config: cannot {} endpoint {}: {}", bind ? "bind" : "connect to",
                          config.endpoint, e.what());
  }
  spdlog::info("KV events: publishing on {} ({}), topic '{}'{}", config.endpoint, bind ? "bound" : "connected",
               config.topic, config.replay_endpoint.empty() ? "" : ", replay on " + config.replay_endpoint);
  thread_ = std::thread([this] { run(); });
}

ZmqKvEventPublisher::~ZmqKvEventPublisher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool ZmqKvEventPublisher::try_publish(KvEventBatch&& batch) {
  {
    std::lock_guard lock(mu_);
    if (int64_t(queue_.size()) >= config_.max_queue_size) {
      ++dropped_;
      return false;
    }
    queue_.push_back(std::move(batch));
    queued_ = int64_t(queue_.size());
  }
  cv_.notify_one();
  return true;
}

void ZmqKvEventPublisher::run() {
  std::vector<KvEventBatch> batches;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // Wake for a batch, or every 20 ms to answer replay requests.
      cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      batches.swap(queue_);
      queued_ = 0;
    }
    for (KvEventBatch& b : batches) send(std::move(b));
    batches.clear();
    try {
      serve_replay();
    } catch (const zmq::error_t& e) {
      spdlog::warn("KV events: replay request failed: {}", e.what());
    }
  }
}

void ZmqKvEventPublisher::send(KvEventBatch&& batch) {
  std::string payload = encode_event_batch(batch, block_size_);
  const uint64_t seq = next_seq_++;
  auto& pub = sockets_->pub;
  try {
    // A PUB socket drops rather than blocks at its high-water mark.
    pub.send(zmq::buffer(config_.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    pub.send(zmq::buffer(be64(seq)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    ++published_;
  } catch (const zmq::error_t& e) {
    spdlog::warn("KV events: sending batch {} failed: {}", seq, e.what());
  }
  if (!sockets_->replay) return;
  ring_.emplace_back(seq, std::move(payload));
  while (int64_t(ring_.size()) > config_.buffer_steps) ring_.pop_front();
}

void ZmqKvEventPublisher::serve_replay() {
  if (!sockets_->replay) return;
  auto& router = *sockets_->replay;
  for (;;) {
    std::vector<zmq::message_t> frames;
    zmq::message_t m;
    if (!router.recv(m, zmq::recv_flags::dontwait)) return;
    frames.push_back(std::move(m));
    while (frames.back().more() && frames.size() < 8) {
      zmq::message_t part;
      (void)router.recv(part, zmq::recv_flags::none);
      frames.push_back(std::move(part));
    }
    // [client identity, empty delimiter (REQ), start sequence number]
    if (frames.size() != 3 || frames[2].size() != 8) continue;
    uint64_t start = 0;
    for (uint8_t c : std::string_view(static_cast<const char*>(frames[2].data()), 8)) start = (start << 8) | c;
    ++replays_;
    const std::string id = frames[0].to_string();
    auto reply = [&](const std::string& seq, const std::string& payload) {
      router.send(zmq::buffer(id), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::str_buffer(""), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::buffer(seq), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      router.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    };
    for (const auto& [seq, payload] : ring_)
      if (seq >= start) reply(be64(seq), payload);
    reply(be64(~uint64_t{0}), "");  // the end: -1
  }
}

void ZmqKvEventPublisher::render_metrics(std::string& out) const {
  auto counter = [&](const char* name, int64_t v, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  counter("pagoda_kv_events_batches_published_total", published_.load(), "KV event batches sent on the PUB socket.");
  counter("pagoda_kv_events_batches_dropped_total", dropped_.load(),
          "KV event batches dropped because the publisher's queue was full (the next batch resends the full set).");
  counter("pagoda_kv_events_replay_requests_total", replays_.load(), "Replay requests answered.");
  out += fmt::format(
      "# HELP pagoda_kv_events_queue_batches KV event batches waiting for the publisher thread.\n"
      "# TYPE pagoda_kv_events_queue_batches gauge\npagoda_kv_events_queue_batches {}\n",
      queued_.load());
}

}  // namespace pagoda::events
