#include "server/kv_event_mirror.h"

#include <cstring>
#include <stdexcept>
#include <zmq.hpp>

namespace pagoda::testing {
namespace {

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  MsgValue value(int depth = 0) {
    if (depth > 16) throw std::runtime_error("msgpack: nested too deep");
    const uint8_t t = byte();
    MsgValue v;
    if (t <= 0x7f) return uint_value(t);
    if (t >= 0xe0) return int_value(int8_t(t));
    if ((t & 0xf0) == 0x90) return array(t & 0x0f, depth);
    if ((t & 0xe0) == 0xa0) return str(t & 0x1f);
    switch (t) {
      case 0xc0: return v;
      case 0xc2:
      case 0xc3:
        v.type = MsgValue::kBool;
        v.u = t == 0xc3;
        return v;
      case 0xcc: return uint_value(be(1));
      case 0xcd: return uint_value(be(2));
      case 0xce: return uint_value(be(4));
      case 0xcf: return uint_value(be(8));
      case 0xd0: return int_value(int8_t(be(1)));
      case 0xd1: return int_value(int16_t(be(2)));
      case 0xd2: return int_value(int32_t(be(4)));
      case 0xd3: return int_value(int64_t(be(8)));
      case 0xcb: {
        const uint64_t bits = be(8);
        v.type = MsgValue::kFloat;
        static_assert(sizeof(double) == 8);
        std::memcpy(&v.f, &bits, 8);
        return v;
      }
      case 0xd9: return str(be(1));
      case 0xda: return str(be(2));
      case 0xdb: return str(be(4));
      case 0xdc: return array(be(2), depth);
      case 0xdd: return array(be(4), depth);
      default: throw std::runtime_error("msgpack: unexpected type byte " + std::to_string(t));
    }
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  uint8_t byte() {
    if (pos_ >= b_.size()) throw std::runtime_error("msgpack: truncated");
    return uint8_t(b_[pos_++]);
  }
  uint64_t be(int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v = (v << 8) | byte();
    return v;
  }
  static MsgValue uint_value(uint64_t u) {
    MsgValue v;
    v.type = MsgValue::kUint;
    v.u = u;
    return v;
  }
  static MsgValue int_value(int64_t i) {
    MsgValue v;
    v.type = MsgValue::kInt;
    v.i = i;
    return v;
  }
  MsgValue str(uint64_t n) {
    if (n > b_.size() - pos_) throw std::runtime_error("msgpack: string past the end");
    MsgValue v;
    v.type = MsgValue::kStr;
    v.s = b_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  MsgValue array(uint64_t n, int depth) {
    if (n > b_.size() - pos_) throw std::runtime_error("msgpack: array longer than the message");
    MsgValue v;
    v.type = MsgValue::kArray;
    for (uint64_t k = 0; k < n; ++k) v.items.push_back(value(depth + 1));
    return v;
  }
  const std::string& b_;
  size_t pos_ = 0;
};

uint64_t seq_of(const zmq::message_t& m) {
  if (m.size() != 8) throw std::runtime_error("sequence frame is not 8 bytes");
  uint64_t s = 0;
  for (size_t k = 0; k < 8; ++k) s = (s << 8) | static_cast<const uint8_t*>(m.data())[k];
  return s;
}

uint64_t as_hash(const MsgValue& v) {
  if (v.type != MsgValue::kUint) throw std::runtime_error("a block hash is not an unsigned integer");
  return v.u;
}

}  // namespace

MsgValue decode_msgpack(const std::string& bytes) {
  Reader r(bytes);
  MsgValue v = r.value();
  if (!r.done()) throw std::runtime_error("msgpack: bytes after the value");
  return v;
}

struct KvEventMirror::Z {
  zmq::context_t ctx{1};
  zmq::socket_t sub{ctx, zmq::socket_type::sub};
};

KvEventMirror::KvEventMirror(const std::string& topic) : z_(std::make_unique<Z>()) {
  z_->sub.set(zmq::sockopt::subscribe, topic);
  z_->sub.set(zmq::sockopt::linger, 0);
  z_->sub.bind("tcp://127.0.0.1:*");
}

KvEventMirror::~KvEventMirror() = default;

std::string KvEventMirror::endpoint() const { return z_->sub.get(zmq::sockopt::last_endpoint); }

void KvEventMirror::drain(int quiet_ms) {
  for (;;) {
    zmq::pollitem_t item{z_->sub.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(quiet_ms)) == 0) return;
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t m;
      if (!z_->sub.recv(m, zmq::recv_flags::none)) throw std::runtime_error("recv failed");
      const bool more = m.more();
      parts.push_back(std::move(m));
      if (!more) break;
    }
    if (parts.size() != 3) throw std::runtime_error("a message of " + std::to_string(parts.size()) + " frames");
    topic_seen = parts[0].to_string();
    const uint64_t seq = seq_of(parts[1]);
    if (int64_t(seq) <= last_seq) continue;  // replayed already
    if (int64_t(seq) != last_seq + 1) {
      ++gaps;
      replay_from(uint64_t(last_seq + 1));
      if (int64_t(seq) <= last_seq) continue;
      if (int64_t(seq) != last_seq + 1) throw std::runtime_error("replay did not fill the gap");
    }
    apply(seq, parts[2].to_string());
  }
}

void KvEventMirror::replay_from(uint64_t from) {
  if (replay_endpoint_.empty()) throw std::runtime_error("a gap in the stream and no replay endpoint");
  ++replays;
  // A DEALER speaking REQ's envelope ([empty, start]): a REQ socket reads
  // only one reply per request, and the publisher streams many.
  zmq::socket_t req(z_->ctx, zmq::socket_type::dealer);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 5000);
  req.connect(replay_endpoint_);
  std::string start(8, '\0');
  for (int k = 0; k < 8; ++k) start[size_t(k)] = char((from >> (56 - 8 * k)) & 0xff);
  req.send(zmq::str_buffer(""), zmq::send_flags::sndmore);
  req.send(zmq::buffer(start), zmq::send_flags::none);
  for (;;) {
    zmq::message_t empty, seq_frame, payload;
    if (!req.recv(empty, zmq::recv_flags::none)) throw std::runtime_error("replay: no answer");
    if (empty.size() != 0 || !empty.more()) throw std::runtime_error("replay: no empty delimiter");
    (void)req.recv(seq_frame, zmq::recv_flags::none);
    if (!seq_frame.more()) throw std::runtime_error("replay: a reply without a payload");
    (void)req.recv(payload, zmq::recv_flags::none);
    const uint64_t seq = seq_of(seq_frame);
    if (seq == ~uint64_t{0}) return;
    if (int64_t(seq) == last_seq + 1) apply(seq, payload.to_string());
  }
}

void KvEventMirror::apply(uint64_t seq, const std::string& payload) {
  const MsgValue batch = decode_msgpack(payload);
  if (batch.type != MsgValue::kArray || batch.items.size() != 3 || batch.items[0].type != MsgValue::kFloat ||
      batch.items[1].type != MsgValue::kArray)
    throw std::runtime_error("not an EventBatch [ts, events, dp_rank]");
  for (const MsgValue& e : batch.items[1].items) {
    if (e.type != MsgValue::kArray || e.items.empty() || e.items[0].type != MsgValue::kStr)
      throw std::runtime_error("an event is not a tagged array");
    const std::string& tag = e.items[0].s;
    if (tag == "AllBlocksCleared") {
      if (e.items.size() != 1) throw std::runtime_error("AllBlocksCleared with fields");
      hashes.clear();
      ++cleared;
    } else if (tag == "BlockRemoved") {
      if (e.items.size() != 3) throw std::runtime_error("BlockRemoved is not [tag, hashes, medium]");
      for (const MsgValue& h : e.items[1].items) {
        hashes.erase(as_hash(h));
        ++removed;
      }
    } else if (tag == "BlockStored") {
      if (e.items.size() != 7) throw std::runtime_error("BlockStored is not 7 fields");
      std::vector<uint32_t> ids;
      for (const MsgValue& t : e.items[3].items) ids.push_back(uint32_t(t.u));
      const int64_t block_size = int64_t(e.items[4].u);
      const auto& hs = e.items[1].items;
      if (int64_t(ids.size()) != block_size * int64_t(hs.size()))
        throw std::runtime_error("BlockStored: token_ids are not block_size per hash");
      std::optional<uint64_t> prev;
      if (e.items[2].type != MsgValue::kNil) prev = as_hash(e.items[2]);
      for (size_t k = 0; k < hs.size(); ++k) {
        const uint64_t h = as_hash(hs[k]);
        hashes.insert(h);
        tokens[h].assign(ids.begin() + ptrdiff_t(k) * block_size, ids.begin() + ptrdiff_t(k + 1) * block_size);
        parent[h] = prev;
        prev = h;
      }
    } else {
      throw std::runtime_error("unknown event tag " + tag);
    }
  }
  last_seq = int64_t(seq);
  ++batches;
}

}  // namespace pagoda::testing
