#include "server/dashboard_stream.h"

#include <chrono>

#include "engine/clock.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace pagoda::server {

DashboardInfo dashboard_info(const ServerState& state, const ServedModel& model) {
  DashboardInfo info;
  info.model = model.name;
  info.max_model_len = model.engine->max_model_len();
  info.now = SteadyClock().now();
  info.stats = model.engine->snapshot();
  info.stall = state.stall.check(info.stats, info.now);
  info.stalls = state.stall.stalls();
  info.draining = state.draining;
  return info;
}

namespace {

// One await_fresh_snapshot: polls until the engine has published a newer
// picture than the one latest when asked, or the picture is current.
struct FreshSnapshotWait {
  static constexpr auto kPoll = std::chrono::milliseconds(10);
  std::shared_ptr<ServerState> state;
  boost::asio::steady_timer timer;
  std::function<void(std::shared_ptr<const EngineSnapshot>)> then;
  uint64_t asked_version = 0;
  int polls_left = int(kFreshWaitS * 1000 / kPoll.count());

  void poll(std::shared_ptr<FreshSnapshotWait> self) {
    const ServedModel* m = state->model();
    if (!m) return then(nullptr);
    const bool current = m->engine->state_snapshot_current();  // before the read: then the picture read is current
    auto snap = m->engine->state_snapshot();
    if (!snap || current || snap->version > asked_version || polls_left-- <= 0) return then(std::move(snap));
    timer.expires_after(kPoll);
    timer.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->poll(self);
    });
  }
};

}  // namespace

void await_fresh_snapshot(std::shared_ptr<ServerState> state, boost::asio::any_io_executor strand,
                          std::function<void(std::shared_ptr<const EngineSnapshot>)> then) {
  auto wait = std::make_shared<FreshSnapshotWait>(
      FreshSnapshotWait{std::move(state), boost::asio::steady_timer(std::move(strand)), std::move(then)});
  if (const ServedModel* m = wait->state->model())
    if (auto snap = m->engine->state_snapshot()) wait->asked_version = snap->version;
  wait->poll(wait);
}

DashboardStream::DashboardStream(std::shared_ptr<ServerState> state, std::weak_ptr<ResponseChannel> channel,
                                 boost::asio::any_io_executor strand)
    : state_(std::move(state)), channel_(std::move(channel)), timer_(std::move(strand)) {
  if (++state_->dashboard_streams > kMaxStreams) {
    --state_->dashboard_streams;
    throw ApiError(503, fmt::format("too many dashboard streams are open ({})", kMaxStreams));
  }
}

DashboardStream::~DashboardStream() { --state_->dashboard_streams; }

void DashboardStream::start() {
  const ServedModel* m = state_->model();
  if (!m || !channel_.lock()) return;
  if (!m->engine->state_snapshot()) throw ApiError(404, "the dashboard is off (--no-dashboard)");
  await_fresh_snapshot(state_, timer_.get_executor(),
                       [self = shared_from_this()](auto snap) { self->begin(std::move(snap)); });
}

void DashboardStream::begin(std::shared_ptr<const EngineSnapshot> first) {
  const ServedModel* m = state_->model();
  auto ch = channel_.lock();
  if (!m || !ch || !first) return;
  sent_ = std::move(first);
  ch->begin_events({{"Cache-Control", "no-store"}});
  ch->send_event(dump(state_json(*sent_, dashboard_info(*state_, *m))));
  schedule();
}

void DashboardStream::schedule() {
  timer_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(kTickS)));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->tick();
  });
}

void DashboardStream::tick() {
  auto ch = channel_.lock();
  const ServedModel* m = state_->model();
  if (!ch) return;  // the client left: the stream ends with its connection
  if (!m || state_->draining) return ch->end_events();
  if (ch->queued_bytes() > kMaxQueuedBytes) return schedule();  // behind: skip, the next delta covers it
  auto latest = m->engine->state_snapshot();
  if (latest && latest->version != sent_->version) {
    ch->send_event(dump(delta_json(diff(*sent_, *latest), dashboard_info(*state_, *m))));
    sent_ = std::move(latest);
    quiet_ticks_ = 0;
  } else if (++quiet_ticks_ >= kHealthEveryTicks) {
    ch->send_event(
        dump({{"type", "health"}, {"now", SteadyClock().now()}, {"health", health_json(dashboard_info(*state_, *m))}}));
    quiet_ticks_ = 0;
  }
  schedule();
}

}  // namespace pagoda::server
