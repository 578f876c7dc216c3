// A MessagePack writer (the spec: github.com/msgpack/msgpack/blob/master/spec.md),
// just what the KV event stream needs: nil, booleans, integers, float64,
// strings and arrays, each in its smallest encoding as the spec asks.
// (Debian's msgpack-cxx would pull a second Boost that conflicts with ours.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::events {

class MsgpackWriter {
 public:
  void nil() { out_ += char(0xc0); }
  void boolean(bool v) { out_ += char(v ? 0xc3 : 0xc2); }
  void uint(uint64_t v);
  void sint(int64_t v);
  void float64(double v);
  void str(std::string_view s);
  void array(uint32_t n);  // then n values

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void be(uint64_t v, int n);  // n bytes, big-endian
  std::string out_;
};

}  // namespace pagoda::events
