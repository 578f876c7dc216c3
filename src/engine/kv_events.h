// KV events out of the engine: once per step (and after a prefix-cache
// reset) the block manager's recorded events (kv/kv_cache_event.h) leave as
// one batch through a KvEventSink, which must never block (it queues or
// drops). After a batch was dropped the stream has a hole a subscriber cannot
// see, so the next batch starts over: "all cleared", then every hash the
// cache holds, and from there deltas again.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/block_manager.h"
#include "kv/kv_cache_event.h"

namespace pagoda {

struct KvEventBatch {
  double timestamp = 0;  // seconds since the Unix epoch
  std::vector<KvCacheEvent> events;
};

class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  // Takes the batch, or returns false (full) without blocking.
  virtual bool try_publish(KvEventBatch&& batch) = 0;
};

// The engine thread's side: takes the manager's events and hands them on.
class KvEventRelay {
 public:
  // Starts (or, with null, stops) recording; a new sink starts with the full set.
  void attach(std::shared_ptr<KvEventSink> sink, BlockManager& blocks);
  void flush(BlockManager& blocks);
  bool attached() const { return sink_ != nullptr; }

 private:
  std::shared_ptr<KvEventSink> sink_;
  bool resync_ = false;  // the last batch was dropped: send the full set next
};

}  // namespace pagoda
