// Interning of extra keys: a string -> id map plus a free list of ids.
#include "kv/extra_keys.h"

#include "kv/block_hash.h"
#include "util/error.h"

namespace pagoda {

ExtraKeyTable::ExtraKeyTable() { entries_.push_back({}); }

uint32_t ExtraKeyTable::acquire(std::string_view key) {
  if (key.empty()) return 0;
  auto it = ids_.find(std::string(key));
  if (it != ids_.end()) {
    ++entries_[it->second].refs;
    return it->second;
  }
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = uint32_t(entries_.size());
    entries_.emplace_back();
  }
  entries_[id] = {std::string(key), hash_extra_key(key), 1};
  ids_.emplace(entries_[id].key, id);
  return id;
}

void ExtraKeyTable::retain(uint32_t id) {
  if (id == 0) return;
  if (id >= entries_.size() || entries_[id].refs <= 0) fail("extra key id {} is not live", id);
  ++entries_[id].refs;
}

void ExtraKeyTable::release(uint32_t id) {
  if (id == 0) return;
  if (id >= entries_.size() || entries_[id].refs <= 0) fail("extra key id {} is not live", id);
  if (--entries_[id].refs == 0) {
    ids_.erase(entries_[id].key);
    entries_[id].key.clear();
    free_ids_.push_back(id);
  }
}

std::optional<uint32_t> ExtraKeyTable::find(std::string_view key) const {
  if (key.empty()) return 0;
  auto it = ids_.find(std::string(key));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace pagoda
