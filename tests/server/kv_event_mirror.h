// A KV event subscriber for the tests, written from vLLM's and llm-d's
// description of the stream: a ZeroMQ SUB socket (bound, as llm-d's is) that
// replays [topic, seq, msgpack EventBatch] messages into the set of block
// hashes the publisher's cache holds. On a gap in the sequence numbers (a
// late join, or messages a full socket dropped) it asks the replay socket
// for the batches it missed. Its msgpack reader is its own, not the
// server's, so the two check each other.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pagoda::testing {

struct MsgValue {
  enum Type { kNil, kBool, kUint, kInt, kFloat, kStr, kArray } type = kNil;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<MsgValue> items;
};
// Throws std::runtime_error on anything malformed or a trailing byte.
MsgValue decode_msgpack(const std::string& bytes);

class KvEventMirror {
 public:
  // Binds a SUB socket on 127.0.0.1 (any free port), subscribed to `topic`.
  explicit KvEventMirror(const std::string& topic);
  ~KvEventMirror();
  std::string endpoint() const;  // tcp://127.0.0.1:PORT, for the publisher to connect to
  void set_replay_endpoint(const std::string& e) { replay_endpoint_ = e; }

  // Applies every message that arrives until none has for quiet_ms.
  void drain(int quiet_ms = 300);
  // Asks the replay socket for every batch from `seq` on and applies them.
  void replay_from(uint64_t seq);

  std::set<uint64_t> hashes;                           // the mirror of the cache
  std::map<uint64_t, std::vector<uint32_t>> tokens;    // each stored hash's token ids
  std::map<uint64_t, std::optional<uint64_t>> parent;  // each stored hash's parent
  int64_t last_seq = -1;
  int64_t batches = 0, replays = 0, gaps = 0, cleared = 0, removed = 0;
  std::string topic_seen;

 private:
  void apply(uint64_t seq, const std::string& payload);
  struct Z;
  std::unique_ptr<Z> z_;
  std::string replay_endpoint_;
};

}  // namespace pagoda::testing
