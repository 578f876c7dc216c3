// The dashboard's wire format (docs/dashboard.md): an engine snapshot and a
// delta between two as JSON, plus the health the server judges. Blocks go
// column-wise (one array per field), so 100k blocks stay a few hundred KiB.
// Only counts and ids: no prompt or output text exists in what is encoded.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/snapshot_delta.h"
#include "server/stall_watch.h"

namespace pagoda::server {

// What the page shows beside the engine's picture.
struct DashboardInfo {
  std::string model;
  int32_t max_model_len = 0;
  double now = 0;  // engine clock seconds, to age requests and the heartbeat
  EngineStats stats;
  StallState stall;
  int64_t stalls = 0;
  bool draining = false;
};

nlohmann::json health_json(const DashboardInfo& info);
// {"type":"state", ...}: the whole snapshot.
nlohmann::json state_json(const EngineSnapshot& s, const DashboardInfo& info);
// {"type":"delta", ...}: what changed since the snapshot of version `from`.
nlohmann::json delta_json(const SnapshotDelta& d, const DashboardInfo& info);

}  // namespace pagoda::server
