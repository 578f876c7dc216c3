#include "events/kv_events_config.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace pagoda::events {
namespace {

using nlohmann::json;

bool is_endpoint(const std::string& e) {
  for (const char* scheme : {"tcp://", "ipc://", "inproc://"})
    if (e.starts_with(scheme) && e.size() > std::string_view(scheme).size()) return true;
  return false;
}

template <class T>
void take(const json& j, const char* key, T& out, const char* type_name) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
  if constexpr (std::is_same_v<T, int64_t>) ok = it->is_number_integer();
  if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
  if (!ok) fail<InvalidArgument>("--kv-events-config: '{}' must be {}, got {}", key, type_name, it->dump());
  out = it->get<T>();
}

}  // namespace

KvEventsConfig parse_kv_events_config(std::string_view text) {
  if (text.size() > 65536) fail<InvalidArgument>("--kv-events-config: longer than 64 KiB");
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail<InvalidArgument>("--kv-events-config: not valid JSON");
  if (!j.is_object()) fail<InvalidArgument>("--kv-events-config: must be a JSON object");
  static const char* const kKnown[] = {"enable_kv_cache_events", "publisher", "endpoint",       "replay_endpoint",
                                       "buffer_steps",           "hwm",       "max_queue_size", "topic"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown))
      fail<InvalidArgument>("--kv-events-config: unknown field '{}'", key);
  }
  KvEventsConfig c;
  take(j, "enable_kv_cache_events", c.enable_kv_cache_events, "true or false");
  c.publisher = c.enable_kv_cache_events ? "zmq" : "null";
  take(j, "publisher", c.publisher, "a string");
  take(j, "endpoint", c.endpoint, "a string");
  take(j, "replay_endpoint", c.replay_endpoint, "a string");
  take(j, "buffer_steps", c.buffer_steps, "an integer");
  take(j, "hwm", c.hwm, "an integer");
  take(j, "max_queue_size", c.max_queue_size, "an integer");
  take(j, "topic", c.topic, "a string");
  if (c.publisher != "null" && c.publisher != "zmq")
    fail<InvalidArgument>("--kv-events-config: publisher must be \"zmq\" or \"null\", got \"{}\"", c.publisher);
  if (!c.enabled()) return c;
  if (!is_endpoint(c.endpoint))
    fail<InvalidArgument>("--kv-events-config: endpoint \"{}\" is not tcp://, ipc:// or inproc://", c.endpoint);
  if (!c.replay_endpoint.empty() && !is_endpoint(c.replay_endpoint))
    fail<InvalidArgument>("--kv-events-config: replay_endpoint \"{}\" is not tcp://, ipc:// or inproc://",
                          c.replay_endpoint);
  if (c.buffer_steps < 1 || c.buffer_steps > 10'000'000)
    fail<InvalidArgument>("--kv-events-config: buffer_steps must be in [1, 10000000], got {}", c.buffer_steps);
  if (c.hwm < 0 || c.hwm > 100'000'000)
    fail<InvalidArgument>("--kv-events-config: hwm must be in [0, 100000000], got {}", c.hwm);
  if (c.max_queue_size < 1 || c.max_queue_size > 10'000'000)
    fail<InvalidArgument>("--kv-events-config: max_queue_size must be in [1, 10000000], got {}", c.max_queue_size);
  return c;
}

}  // namespace pagoda::events
