// The KV event publisher over ZeroMQ, as vLLM's ZmqEventPublisher speaks it
// (vllm/distributed/kv_events.py) and llm-d's kv-cache manager reads it:
//
//   PUB  multipart [topic, sequence number (8 bytes, big-endian), msgpack EventBatch]
//        sequence numbers count batches from 0, one per message
//   ROUTER (replay_endpoint, optional): a request [8-byte big-endian start]
//        from a REQ socket is answered with every buffered batch from that
//        number on, each [seq, payload], then [-1 as 8 bytes, empty]
//
// The engine thread only moves a batch into a bounded queue (try_publish);
// this publisher's own thread encodes and sends, and keeps the last
// buffer_steps batches for replay. A full queue drops the batch (counted);
// the engine then starts over with the full set (engine/kv_events.h). A PUB
// socket never blocks either: past hwm queued messages a slow subscriber
// loses messages, sees the gap in the sequence numbers, and replays.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv_events.h"
#include "events/kv_events_config.h"

namespace pagoda::events {

class ZmqKvEventPublisher final : public KvEventSink {
 public:
  // Binds or connects the sockets (InvalidArgument naming an endpoint that
  // cannot be used) and starts the thread.
  ZmqKvEventPublisher(const KvEventsConfig& config, int32_t block_size);
  ~ZmqKvEventPublisher() override;  // stops the thread; unsent batches are lost

  bool try_publish(KvEventBatch&& batch) override;

  // pagoda_kv_events_* series for /metrics (Prometheus text).
  void render_metrics(std::string& out) const;

 private:
  struct Sockets;
  void run();
  void send(KvEventBatch&& batch);
  void serve_replay();

  const KvEventsConfig config_;
  const int32_t block_size_;
  std::unique_ptr<Sockets> sockets_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<KvEventBatch> queue_;                    // under mu_
  bool stop_ = false;                                  // under mu_
  uint64_t next_seq_ = 0;                              // publisher thread only
  std::deque<std::pair<uint64_t, std::string>> ring_;  // publisher thread only: (seq, payload)
  std::atomic<int64_t> published_{0}, dropped_{0}, replays_{0}, queued_{0};
  std::thread thread_;
};

}  // namespace pagoda::events
