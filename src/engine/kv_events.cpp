#include "engine/kv_events.h"

#include <chrono>

namespace pagoda {

void KvEventRelay::attach(std::shared_ptr<KvEventSink> sink, BlockManager& blocks) {
  sink_ = std::move(sink);
  blocks.record_events(sink_ != nullptr);
  resync_ = sink_ != nullptr;  // whatever is cached already goes out first
}

void KvEventRelay::flush(BlockManager& blocks) {
  if (!sink_) return;
  KvEventBatch batch;
  batch.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  batch.events = blocks.take_events();
  if (resync_) {
    // The deltas are in the full set already.
    batch.events.assign(1, KvCacheEvent{KvCacheEvent::Kind::kAllCleared, 0, {}, {}});
    for (KvCacheEvent& e : blocks.cached_as_events()) batch.events.push_back(std::move(e));
  }
  if (batch.events.empty()) return;
  resync_ = !sink_->try_publish(std::move(batch));
}

}  // namespace pagoda
