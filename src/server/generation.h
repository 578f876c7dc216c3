// One completion or chat completion in flight: the parsed request, the
// engine's id for it, and each choice's output so far. Owned by its
// connection and by the engine's sink (which shares it across threads only
// through `gone`); everything else is touched on the connection's strand.
#pragma once

#include <atomic>
#include <vector>

#include "server/openai_request.h"
#include "server/openai_response.h"

namespace pagoda::server {

struct Generation {
  GenerationRequest req;
  ResponseIdentity ident;
  uint64_t id = 0;  // the engine's
  std::vector<ChoiceState> choices;
  Usage usage;
  bool head_sent = false;    // streaming: the SSE head is out
  bool finished = false;     // the response is complete (or failed): later deltas are dropped
  bool retired = false;      // no longer counted in active_generations
  bool engine_done = false;  // the engine delivered the request's last delta
  bool health_probe = false; // GET /health?generate=1: answered as a health status
  std::atomic<bool> gone{false};  // the client left: the sink tells the engine
};

}  // namespace pagoda::server
