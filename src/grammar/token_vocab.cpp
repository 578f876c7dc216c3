// Builds the trie from the tokens sorted by bytes: consecutive tokens share
// their common prefix, so one pass with a stack of open nodes suffices.
#include "grammar/token_vocab.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagoda::grammar {

TokenVocab::TokenVocab(std::vector<std::string> token_bytes, std::vector<int32_t> eog)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog)) {
  static std::atomic<uint64_t> next_serial{1};
  serial_ = next_serial++;
  std::sort(eog_.begin(), eog_.end());
  for (int32_t id : eog_)
    if (id < 0 || size_t(id) >= bytes_.size())
      fail<InvalidArgument>("end-of-generation id {} outside the vocabulary", id);
  std::vector<int32_t> order;
  for (size_t i = 0; i < bytes_.size(); ++i)
    if (!bytes_[i].empty()) order.push_back(int32_t(i));
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b); });
  std::vector<uint32_t> open;  // open[d-1]: the node of depth d on the current path
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      nodes_[open.back()].end = uint32_t(nodes_.size());
      open.pop_back();
    }
  };
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = bytes_[id];
    if (s.size() > UINT16_MAX) fail<InvalidArgument>("token {} has {} bytes", id, s.size());
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < s.size() && prev[lcp] == s[lcp]) ++lcp;
    close_to(std::min(lcp, open.size()));
    for (size_t d = open.size(); d < s.size(); ++d) {
      open.push_back(uint32_t(nodes_.size()));
      nodes_.push_back({0, 0, 0, uint16_t(d + 1), uint8_t(s[d])});
      node_any_token_.push_back(id);
    }
    Node& leaf = nodes_[open.back()];
    if (leaf.tok_begin == leaf.tok_end) leaf.tok_begin = leaf.tok_end = uint32_t(node_ids_.size());
    node_ids_.push_back(id);  // sorted order keeps a node's tokens contiguous
    leaf.tok_end = uint32_t(node_ids_.size());
    prev = s;
  }
  close_to(0);
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tok) {
  std::vector<std::string> bytes(tok.vocab_size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = tok.decode_bytes(int32_t(i));
  return std::make_shared<const TokenVocab>(std::move(bytes), tok.end_of_generation_ids());
}

bool TokenVocab::is_eog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

}  // namespace pagoda::grammar
