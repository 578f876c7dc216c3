// Interned extra keys (cache salts). A hashed block stores a small id instead
// of a string, and the id still compares exactly: two blocks have the same id
// iff they have the same key. Ids are reference counted (by sequences and by
// hashed blocks) and recycled, so a stream of one-off salts cannot leak.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagoda {

class ExtraKeyTable {
 public:
  ExtraKeyTable();  // id 0 is the empty key, always present

  uint32_t acquire(std::string_view key);  // interns the key and takes a reference
  void retain(uint32_t id);
  void release(uint32_t id);
  std::optional<uint32_t> find(std::string_view key) const;

  uint64_t hash(uint32_t id) const { return entries_[id].hash; }
  const std::string& key(uint32_t id) const { return entries_[id].key; }
  int64_t refs(uint32_t id) const { return entries_[id].refs; }
  size_t capacity() const { return entries_.size(); }  // ids in [0, capacity)
  bool live(uint32_t id) const { return id == 0 || entries_[id].refs > 0; }

 private:
  friend struct BlockManagerTestPeer;
  struct Entry {
    std::string key;
    uint64_t hash = 0;
    int64_t refs = 0;  // id 0 is never counted
  };
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_ids_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace pagoda
