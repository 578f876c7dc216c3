// GET /debug/events: the dashboard's Server-Sent Events. First the whole
// state, then every 250 ms, if the engine published a newer snapshot, the
// delta from the last one sent (so a reader that fell behind simply gets a
// coarser delta: nothing queues up per step), or, now and then, the health
// alone. A reader whose connection holds more than kMaxQueuedBytes unsent is
// skipped until it catches up; one that takes nothing is dropped by
// --write-timeout. The engine never sees any of this: the stream only reads
// the published snapshot. The number of streams is bounded (503 beyond).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>

#include "server/dashboard_json.h"
#include "server/response_channel.h"
#include "server/server_state.h"

namespace pagoda::server {

// What the page shows of the server beside the snapshot, judged now.
DashboardInfo dashboard_info(const ServerState& state, const ServedModel& model);

// Calls `then` on `strand` with a picture of the engine no older than this
// call: the latest at once if nothing happened since it was taken; otherwise
// the one the engine builds when asked (an unwatched engine builds none), or
// the latest after kFreshWaitS. Null when the model is gone or snapshots are
// off. Never blocks: it polls on a timer.
constexpr double kFreshWaitS = 1.0;
void await_fresh_snapshot(std::shared_ptr<ServerState> state, boost::asio::any_io_executor strand,
                          std::function<void(std::shared_ptr<const EngineSnapshot>)> then);

class DashboardStream : public std::enable_shared_from_this<DashboardStream> {
 public:
  static constexpr int kMaxStreams = 8;
  static constexpr size_t kMaxQueuedBytes = 1 << 20;
  static constexpr double kTickS = 0.25;
  static constexpr int kHealthEveryTicks = 4;  // a health event when nothing changed for this long

  // Throws ApiError 503 when kMaxStreams are open.
  DashboardStream(std::shared_ptr<ServerState> state, std::weak_ptr<ResponseChannel> channel,
                  boost::asio::any_io_executor strand);
  ~DashboardStream();
  void start();  // on the strand: the head and the whole state

 private:
  void begin(std::shared_ptr<const EngineSnapshot> first);
  void schedule();
  void tick();

  std::shared_ptr<ServerState> state_;
  std::weak_ptr<ResponseChannel> channel_;  // gone when the client is
  boost::asio::steady_timer timer_;
  std::shared_ptr<const EngineSnapshot> sent_;  // what the reader's picture is built from
  int quiet_ticks_ = 0;
};

}  // namespace pagoda::server
