// libFuzzer target for the server's HTTP request reading (RequestReader), in
// process, no network: the input is a byte stream of pipelined requests, fed
// in pieces whose sizes come from the input's first byte, as a connection
// reads them. Any input must end each request as done or failed (400, 408,
// 413 or 431) without throwing; a reader never consumes more than it is
// given, nothing after a failure; and a request read in pieces is the same
// request read in one go. Small limits, so the fuzzer reaches them. Seeds:
// fuzz/corpus/server_request_reader.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/request_reader.h"

namespace {

using pagoda::server::RequestLimits;
using pagoda::server::RequestReader;

constexpr RequestLimits kLimits{.header_bytes = 1024, .body_bytes = 4096, .framing_bytes = 512};

void check(bool ok) {
  if (!ok) std::abort();
}

// Reads one request from `in`, fed `piece` bytes at a time (0: all at once).
// Returns the bytes it used and leaves the reader's outcome in `reader`.
size_t read_one(RequestReader& reader, std::string_view in, size_t piece) {
  size_t used = 0, given = 0;
  while (reader.state() == RequestReader::State::need_more && given < in.size()) {
    given = piece == 0 ? in.size() : std::min(in.size(), given + piece);
    const std::string_view avail = in.substr(used, given - used);
    const size_t n = reader.feed(avail);
    check(n <= avail.size());
    used += n;
  }
  if (reader.state() == RequestReader::State::failed) {
    const int s = reader.error_status();
    check(s == 400 || s == 413 || s == 431);
    check(!reader.error().empty());
    check(reader.feed(in.substr(used)) == 0);
  }
  return used;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = data[0] % 17;  // 0: the whole rest at once
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  for (int requests = 0; requests < 8 && !in.empty(); ++requests) {
    RequestReader split(kLimits);
    const size_t used = read_one(split, in, piece);
    if (split.state() != RequestReader::State::done) break;
    RequestReader whole(kLimits);
    check(read_one(whole, in, 0) == used);
    check(whole.state() == RequestReader::State::done);
    const auto a = split.release(), b = whole.release();
    check(a.method_string() == b.method_string() && a.target() == b.target() && a.body() == b.body());
    in.remove_prefix(used);
  }
  return 0;
}
