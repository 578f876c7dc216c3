// The KV event pieces one by one: the msgpack writer against the spec's
// byte layouts, the EventBatch encoding, the config's checks, and the relay
// that starts over with the full set after a dropped batch.
#include <gtest/gtest.h>

#include "engine/kv_events.h"
#include "events/kv_event_encoding.h"
#include "events/kv_events_config.h"
#include "events/msgpack_writer.h"
#include "util/error.h"

namespace pagoda::events {
namespace {

std::string hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

TEST(Msgpack, SmallestEncodingsFromTheSpec) {
  MsgpackWriter w;
  w.uint(5);             // positive fixint
  w.uint(200);           // uint8
  w.uint(65535);         // uint16
  w.uint(70000);         // uint32
  w.uint(~uint64_t{0});  // uint64
  w.sint(-1);            // negative fixint
  w.sint(-100);          // int8
  w.nil();
  w.boolean(true);
  w.str("ab");     // fixstr
  w.array(2);      // fixarray
  w.float64(1.5);  // float64
  EXPECT_EQ(hex(w.bytes()),
            "05"
            "ccc8"
            "cdffff"
            "ce00011170"
            "cfffffffffffffffff"
            "ff"
            "d09c"
            "c0"
            "c3"
            "a26162"
            "92"
            "cb3ff8000000000000");
  MsgpackWriter big;
  big.str(std::string(40, 'x'));  // str8
  big.array(20);                  // array16
  EXPECT_EQ(hex(big.bytes()).substr(0, 4), "d928");
  EXPECT_EQ(hex(big.bytes()).substr(84), "dc0014");
}

TEST(KvEventEncoding, VllmEventBatchLayout) {
  KvEventBatch b;
  b.timestamp = 2.0;
  b.events.push_back({KvCacheEvent::Kind::kAllCleared, 0, {}, {}});
  b.events.push_back({KvCacheEvent::Kind::kStored, 0x1122334455667788ull, std::nullopt, {1, 2}});
  b.events.push_back({KvCacheEvent::Kind::kStored, 7, 0x1122334455667788ull, {3, 4}});
  b.events.push_back({KvCacheEvent::Kind::kRemoved, 7, {}, {}});
  b.events.push_back({KvCacheEvent::Kind::kRemoved, 8, {}, {}});
  const std::string bytes = encode_event_batch(b, 2);
  EXPECT_EQ(hex(bytes),
            "93"
            "cb4000000000000000"
            "94"  // [ts, [4 events], ...
            "91"
            "b0" +
                hex("AllBlocksCleared") +  // ["AllBlocksCleared"]
                "97"
                "ab" +
                hex("BlockStored") +
                "91cf1122334455667788"
                "c0"
                "920102"
                "02"
                "c0"
                "c0"
                "97"
                "ab" +
                hex("BlockStored") +
                "9107"
                "cf1122334455667788"
                "920304"
                "02"
                "c0"
                "c0"
                "93"
                "ac" +
                hex("BlockRemoved") +
                "920708"
                "c0"    // removals merged
                "00");  // dp rank
}

TEST(KvEventsConfig, VllmFieldsAndDefaults) {
  const KvEventsConfig c = parse_kv_events_config(
      R"({"enable_kv_cache_events": true, "endpoint": "tcp://*:5557", "topic": "kv@p@m", "replay_endpoint": "tcp://*:5558"})");
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.publisher, "zmq");
  EXPECT_EQ(c.buffer_steps, 10000);
  EXPECT_EQ(c.hwm, 100000);
  EXPECT_FALSE(parse_kv_events_config("{}").enabled());
  EXPECT_FALSE(parse_kv_events_config(R"({"enable_kv_cache_events": true, "publisher": "null"})").enabled());
  for (const char* bad : {"[]", "{\"topic\": 3}", "{\"buffer_steps\": 1.5}", "{\"x\": 1}",
                          R"({"enable_kv_cache_events": true, "max_queue_size": 0})"})
    EXPECT_THROW(parse_kv_events_config(bad), InvalidArgument) << bad;
  EXPECT_THROW(parse_kv_events_config(std::string(70000, ' ')), InvalidArgument);
}

// A sink that refuses while `full` and keeps what it takes.
struct FakeSink : KvEventSink {
  bool full = false;
  std::vector<KvEventBatch> got;
  bool try_publish(KvEventBatch&& b) override {
    if (full) return false;
    got.push_back(std::move(b));
    return true;
  }
};

TEST(KvEventRelay, AfterADropTheNextBatchIsTheFullSet) {
  BlockManager bm(BlockManagerConfig{8, 2, true});
  auto sink = std::make_shared<FakeSink>();
  KvEventRelay relay;
  relay.attach(sink, bm);
  relay.flush(bm);
  ASSERT_EQ(sink->got.size(), 1u);  // a new subscriber stream starts with "all cleared"
  ASSERT_EQ(sink->got[0].events.size(), 1u);
  const std::vector<TokenId> a = {1, 2, 3, 4, 5};
  ASSERT_TRUE(bm.allocate(1, 5));
  bm.commit(1, a, 5);
  relay.flush(bm);
  ASSERT_EQ(sink->got.size(), 2u);
  ASSERT_EQ(sink->got[1].events.size(), 2u);  // two full blocks stored
  EXPECT_FALSE(sink->got[1].events[0].parent.has_value());
  EXPECT_EQ(sink->got[1].events[1].parent, sink->got[1].events[0].hash);
  EXPECT_EQ(sink->got[1].events[1].tokens, (std::vector<TokenId>{3, 4}));
  // Dropped: another sequence's block is lost with the batch...
  sink->full = true;
  const std::vector<TokenId> b = {9, 9, 7};
  ASSERT_TRUE(bm.allocate(2, 3));
  bm.commit(2, b, 3);
  relay.flush(bm);
  sink->full = false;
  relay.flush(bm);  // ...so the next batch starts over: cleared + all three hashes
  ASSERT_EQ(sink->got.size(), 3u);
  const auto& e = sink->got[2].events;
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].kind, KvCacheEvent::Kind::kAllCleared);
  std::vector<BlockHash> hashes;
  for (size_t i = 1; i < e.size(); ++i) hashes.push_back(e[i].hash);
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(hashes, bm.cached_hashes());
  relay.flush(bm);
  EXPECT_EQ(sink->got.size(), 3u);  // nothing new: nothing sent
  bm.free(1);
  bm.free(2);
  ASSERT_TRUE(bm.reset_prefix_cache());
  relay.flush(bm);
  ASSERT_EQ(sink->got.size(), 4u);
  ASSERT_EQ(sink->got[3].events.size(), 1u);
  EXPECT_EQ(sink->got[3].events[0].kind, KvCacheEvent::Kind::kAllCleared);
}

}  // namespace
}  // namespace pagoda::events
