// The HTTP side of `pagoda serve`'s flags (the engine's are EngineConfig).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;               // 0: any free port (Server::listen returns it)
  std::string api_key;                // "": no authentication
  double write_timeout_s = 30;        // a client that accepts no bytes this long is dropped
  double shutdown_timeout_s = 30;     // SIGINT/SIGTERM: how long in-flight requests may finish
  double keep_alive_timeout_s = 120;  // an idle connection is closed after this
  double header_timeout_s = 10;       // request line + headers must arrive within this of their first byte (408)
  double body_timeout_s = 30;         // a request body that brings no byte this long gets 408
  int max_connections = 0;            // beyond it a new connection gets 503 (0: from the open-files limit)
  int request_workers = 2;            // threads that parse and tokenize requests off the I/O threads
  double stall_min_ms = 2000;         // /health: no step is a stall before this (see stall_watch.h)
  double stall_factor = 4;            // ... nor before this many times its predicted time
  double stall_timeout_s = 30;        // ... nor, with no prediction yet, before this
  size_t max_body_bytes = 8u << 20;   // larger request bodies get 413
  int io_threads = 1;                 // threads running the event loop
  bool dashboard = true;              // --no-dashboard: no page, no /debug/* (404)
  // --allowed-origins: browser origins answered with CORS headers ("*": any); empty: no CORS headers.
  std::vector<std::string> allowed_origins;
  std::string version;  // GET /version
};

}  // namespace pagoda::server
