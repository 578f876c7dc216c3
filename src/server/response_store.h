// The Responses API's store (POST /v1/responses with store: true, the
// default): the last responses in memory, so that previous_response_id can
// continue a conversation and GET / DELETE /v1/responses/{id} can read and
// remove one. Bounded by count and by bytes, least recently used out first;
// nothing survives a restart. Every call takes the store's lock: parsing
// (request workers), finishing (connection strands) and GET/DELETE all use it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace pagoda::server {

struct StoredResponse {
  nlohmann::json response;              // the response object as it was returned
  nlohmann::ordered_json conversation;  // chat messages: every input and output so far, less instructions
  nlohmann::json input_items;           // the request's input items (GET .../input_items)
  size_t bytes = 0;                     // what it counts against the byte bound
};

class ResponseStore {
 public:
  explicit ResponseStore(size_t max_entries = 256, size_t max_bytes = size_t(64) << 20);

  // Keeps `r` under its response's id, evicting the least recently used
  // beyond the bounds (one response alone above max_bytes is not kept).
  void put(const std::string& id, StoredResponse r);
  // The stored response, or null; a hit counts as a use.
  std::shared_ptr<const StoredResponse> get(const std::string& id);
  bool erase(const std::string& id);
  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const StoredResponse>>;
  void evict();

  const size_t max_entries_, max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace pagoda::server
