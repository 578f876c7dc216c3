// libFuzzer target for --kv-events-config: any text is a config that passes
// its own checks or a pagoda::Error, never a crash (nlohmann's own parse
// errors included). The input is capped at 64 KiB by the parser itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "events/kv_events_config.h"
#include "fuzz_shared.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    const auto c = pagoda::events::parse_kv_events_config(in);
    if (c.enabled()) {
      pagoda::fuzz::check(
          c.endpoint.starts_with("tcp://") || c.endpoint.starts_with("ipc://") || c.endpoint.starts_with("inproc://"),
          "an accepted endpoint has a known scheme");
      pagoda::fuzz::check(c.buffer_steps >= 1 && c.max_queue_size >= 1, "bounds hold");
    }
  } catch (const pagoda::Error&) {
  }
  return 0;
}
