// Time as the engine sees it, in seconds. Production uses the steady clock;
// tests use a manual clock so deadlines never depend on the machine's speed.
#pragma once

#include <atomic>
#include <chrono>

namespace pagoda {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;
};

class SteadyClock : public Clock {
 public:
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

class ManualClock : public Clock {
 public:
  double now() const override { return t_.load(); }
  void advance(double seconds) { t_.store(t_.load() + seconds); }

 private:
  std::atomic<double> t_{1000.0};
};

}  // namespace pagoda
