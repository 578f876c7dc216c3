// A reader's side of a request: the engine's sink pushes deltas into it
// without blocking; the reader pops them on its own thread, waiting as long
// as it likes. Dropping the queue (close()) makes the next push report the
// reader gone, which aborts the request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/request.h"

namespace pagoda {

class OutputQueue : public std::enable_shared_from_this<OutputQueue> {
 public:
  static std::shared_ptr<OutputQueue> create() { return std::shared_ptr<OutputQueue>(new OutputQueue()); }

  OutputSink sink() {
    return [self = shared_from_this()](RequestOutput&& out) { return self->push(std::move(out)); };
  }

  bool push(RequestOutput&& out) {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    items_.push_back(std::move(out));
    cv_.notify_one();
    return true;
  }

  // The next delta, or nothing if none came within the timeout.
  std::optional<RequestOutput> pop(std::chrono::milliseconds timeout = std::chrono::hours(24)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !items_.empty(); })) return std::nullopt;
    RequestOutput out = std::move(items_.front());
    items_.pop_front();
    return out;
  }

  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    items_.clear();
  }

 private:
  OutputQueue() = default;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestOutput> items_;
  bool closed_ = false;
};

}  // namespace pagoda
