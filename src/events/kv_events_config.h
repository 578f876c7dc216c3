// `pagoda serve --kv-events-config JSON`: where KV events go, with vLLM's
// KVEventsConfig fields and defaults (vllm/config/kv_events.py), so a
// deployment written for vLLM carries over:
//   {"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",
//    "topic": "kv@pod@model", "replay_endpoint": "tcp://*:5558",
//    "buffer_steps": 10000, "hwm": 100000, "max_queue_size": 100000}
// The endpoint binds when it names a wildcard host (*, ::) or is ipc:// or
// inproc://, and connects otherwise (a subscriber that binds, as llm-d's
// does); the replay endpoint always binds. Unknown fields and wrong types are
// errors, each a one-line InvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::events {

struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher = "null";  // "null" (off) or "zmq"; "zmq" when enabled and not given
  std::string endpoint = "tcp://*:5557";
  std::string replay_endpoint;      // "": no replay socket
  int64_t buffer_steps = 10000;     // batches kept for replay
  int64_t hwm = 100000;             // the PUB socket's send high-water mark (messages)
  int64_t max_queue_size = 100000;  // batches waiting for the publisher thread; beyond: dropped
  std::string topic;

  bool enabled() const { return enable_kv_cache_events && publisher == "zmq"; }
};

// Parses and checks the JSON text (at most 64 KiB).
KvEventsConfig parse_kv_events_config(std::string_view json_text);

}  // namespace pagoda::events
