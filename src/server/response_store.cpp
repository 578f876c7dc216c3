#include "server/response_store.h"

namespace pagoda::server {

ResponseStore::ResponseStore(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

void ResponseStore::put(const std::string& id, StoredResponse r) {
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  if (r.bytes == 0)
    r.bytes = r.response.dump(-1, ' ', false, replace).size() + r.conversation.dump(-1, ' ', false, replace).size() +
              r.input_items.dump(-1, ' ', false, replace).size() + id.size();
  if (r.bytes > max_bytes_ || max_entries_ == 0) return;
  std::lock_guard lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) {  // ids are random: a repeat replaces
    bytes_ -= it->second->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += r.bytes;
  lru_.emplace_front(id, std::make_shared<const StoredResponse>(std::move(r)));
  index_[id] = lru_.begin();
  evict();
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto it = index_.find(id);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto it = index_.find(id);
  if (it == index_.end()) return false;
  bytes_ -= it->second->second->bytes;
  lru_.erase(it->second);
  index_.erase(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

void ResponseStore::evict() {
  while (!lru_.empty() && (lru_.size() > max_entries_ || bytes_ > max_bytes_)) {
    bytes_ -= lru_.back().second->bytes;
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

}  // namespace pagoda::server
