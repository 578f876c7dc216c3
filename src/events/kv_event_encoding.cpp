#include "events/kv_event_encoding.h"

#include "events/msgpack_writer.h"

namespace pagoda::events {
namespace {

using Kind = KvCacheEvent::Kind;

void stored(MsgpackWriter& w, const KvCacheEvent& e, int32_t block_size) {
  w.array(7);
  w.str("BlockStored");
  w.array(1);
  w.uint(e.hash);
  if (e.parent)
    w.uint(*e.parent);
  else
    w.nil();
  w.array(uint32_t(e.tokens.size()));
  for (TokenId t : e.tokens) w.uint(uint64_t(uint32_t(t)));
  w.sint(block_size);
  w.nil();  // lora_id
  w.nil();  // medium
}

}  // namespace

std::string encode_event_batch(const KvEventBatch& batch, int32_t block_size) {
  const auto& ev = batch.events;
  // Count the encoded events first: runs of removals merge.
  uint32_t n = 0;
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind != Kind::kRemoved || i == 0 || ev[i - 1].kind != Kind::kRemoved) ++n;
  MsgpackWriter w;
  w.array(3);
  w.float64(batch.timestamp);
  w.array(n);
  for (size_t i = 0; i < ev.size();) {
    switch (ev[i].kind) {
      case Kind::kStored: stored(w, ev[i++], block_size); break;
      case Kind::kAllCleared:
        w.array(1);
        w.str("AllBlocksCleared");
        ++i;
        break;
      case Kind::kRemoved: {
        size_t end = i;
        while (end < ev.size() && ev[end].kind == Kind::kRemoved) ++end;
        w.array(3);
        w.str("BlockRemoved");
        w.array(uint32_t(end - i));
        for (; i < end; ++i) w.uint(ev[i].hash);
        w.nil();  // medium
        break;
      }
    }
  }
  w.sint(0);  // data_parallel_rank
  return w.take();
}

}  // namespace pagoda::events
