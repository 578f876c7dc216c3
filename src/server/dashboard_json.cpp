#include "server/dashboard_json.h"

namespace pagoda::server {
namespace {

using json = nlohmann::json;

// Blocks [begin, end) column-wise.
json blocks_json(std::span<const BlockView> blocks) {
  json state = json::array(), ref = json::array(), lru = json::array(), tokens = json::array(), hash = json::array(),
       owners = json::array();
  for (const BlockView& b : blocks) {
    state.push_back(int(b.state));
    ref.push_back(b.ref_count);
    lru.push_back(b.lru_rank);
    tokens.push_back(b.tokens);
    hash.push_back(b.hash_prefix);
    owners.push_back(b.owners);
  }
  return {{"state", std::move(state)},   {"ref", std::move(ref)},   {"lru", std::move(lru)},
          {"tokens", std::move(tokens)}, {"hash", std::move(hash)}, {"owners", std::move(owners)}};
}

json request_json(const RequestView& r) {
  return {{"seq", r.seq},
          {"request", r.request},
          {"choice", r.choice},
          {"priority", r.priority},
          {"state", to_string(r.state)},
          {"queue_pos", r.queue_pos},
          {"prompt_tokens", r.prompt_tokens},
          {"computed_tokens", r.computed_tokens},
          {"cached_tokens", r.cached_tokens},
          {"generated_tokens", r.generated_tokens},
          {"blocks", r.blocks},
          {"preemptions", r.preemptions},
          {"arrival", r.arrival},
          {"deadline", r.deadline}};
}

json finish_json(const FinishView& f) {
  return {{"index", f.index},
          {"request", f.request},
          {"choice", f.choice},
          {"reason", to_string(f.reason)},
          {"time", f.time},
          {"prompt_tokens", f.prompt_tokens},
          {"generated_tokens", f.generated_tokens}};
}

json counters_json(const SnapshotCounters& c) {
  return {{"steps", c.steps},
          {"preemptions", c.preemptions},
          {"tokens_processed", c.tokens_processed},
          {"prompt_tokens", c.prompt_tokens},
          {"generation_tokens", c.generation_tokens},
          {"cached_tokens", c.cached_tokens},
          {"requests_received", c.requests_received},
          {"requests_finished", c.requests_finished},
          {"aborted", c.aborted},
          {"timed_out", c.timed_out},
          {"errored", c.errored},
          {"step_failures", c.step_failures},
          {"idle_check_failures", c.idle_check_failures},
          {"running", c.running},
          {"waiting", c.waiting},
          {"last_step_tokens", c.last_step_tokens},
          {"last_step_experts", c.last_step_experts},
          {"kv_used", c.kv_used},
          {"kv_cached", c.kv_cached},
          {"kv_free", c.kv_free},
          {"state_slots", c.state_slots},
          {"state_slots_used", c.state_slots_used},
          {"state_checkpoints", c.state_checkpoints},
          {"state_checkpoints_used", c.state_checkpoints_used},
          {"last_step_seconds", c.last_step_seconds},
          {"last_step_end", c.last_step_end},
          {"step_predicted_s", c.step_predicted_s},
          {"ttft", c.ttft},
          {"itl", c.itl}};
}

json audit_json(const AuditView& a) { return {{"enabled", a.enabled}, {"passed", a.passed}, {"failure", a.failure}}; }

template <class T, class F>
json array_of(const std::vector<T>& v, F f) {
  json out = json::array();
  for (const T& x : v) out.push_back(f(x));
  return out;
}

}  // namespace

json health_json(const DashboardInfo& info) {
  const EngineStats& s = info.stats;
  return {{"status", info.draining        ? "draining"
                     : info.stall.stalled ? "stalled"
                                          : "ok"},
          {"reason", info.stall.reason},
          {"heartbeat_age_s", std::max(0.0, info.now - s.last_step_end)},
          {"step_in_progress", s.step_in_progress},
          {"step_running_s", s.step_in_progress ? std::max(0.0, info.now - s.step_started_at) : 0.0},
          {"stall_limit_s", info.stall.limit_seconds},
          {"stalls", info.stalls}};
}

json state_json(const EngineSnapshot& s, const DashboardInfo& info) {
  return {{"type", "state"},
          {"version", s.version},
          {"step", s.step},
          {"time", s.time},
          {"now", info.now},
          {"model", info.model},
          {"max_model_len", info.max_model_len},
          {"block_size", s.block_size},
          {"paged", s.paged},
          {"histogram_bounds", kLatencyBounds},
          {"blocks", blocks_json(s.blocks)},
          {"requests", array_of(s.requests, request_json)},
          {"finishes", array_of(s.finishes, finish_json)},
          {"counters", counters_json(s.counters)},
          {"audit", audit_json(s.audit)},
          {"health", health_json(info)}};
}

json delta_json(const SnapshotDelta& d, const DashboardInfo& info) {
  json runs = json::array();
  for (const BlockRun& r : d.blocks) {
    json run = blocks_json(r.blocks);
    run["first"] = r.first;
    runs.push_back(std::move(run));
  }
  return {{"type", "delta"},
          {"from", d.from_version},
          {"version", d.version},
          {"step", d.step},
          {"time", d.time},
          {"now", info.now},
          {"blocks", std::move(runs)},
          {"removed", d.removed},
          {"upserted", array_of(d.upserted, request_json)},
          {"finishes_dropped", d.finishes_dropped},
          {"finishes_added", array_of(d.finishes_added, finish_json)},
          {"counters", counters_json(d.counters)},
          {"audit", audit_json(d.audit)},
          {"health", health_json(info)}};
}

}  // namespace pagoda::server
