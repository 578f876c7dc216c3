// The vocabulary as the grammar matcher sees it: each token's bytes, a trie
// of those bytes, and the end-of-generation ids. Built once per tokenizer,
// shared (immutable) by every grammar and request.
//
// Contract:
//   - bytes(id) is Tokenizer::decode_bytes(id). Tokens with no bytes
//     (control, unknown, unused) are not in the trie: a grammar never allows
//     them, except end-of-generation ids when the grammar may end.
//   - The trie's nodes are in preorder, which is the lexicographic order of
//     the byte strings: node n's subtree is [n, node(n).end), its depth is
//     the length of its prefix, and the tokens whose bytes are exactly that
//     prefix are node_tokens(n) (several ids may share bytes, as an SPM byte
//     token <0x41> and "A"). There is no stored root; depth-1 nodes start at 0.
//   - Masks are bitsets of mask_words() 32-bit words: token id i is bit
//     (i % 32) of word i / 32.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pagoda {
class Tokenizer;
}

namespace pagoda::grammar {

class TokenVocab {
 public:
  struct Node {
    uint32_t end;        // one past the last node of this subtree
    uint32_t tok_begin;  // into token ids: [tok_begin, tok_end)
    uint32_t tok_end;
    uint16_t depth;  // prefix length in bytes (1 for a first byte)
    uint8_t byte;    // the last byte of the prefix
  };

  // eog: ids allowed (as EOS) only where the grammar may end.
  TokenVocab(std::vector<std::string> token_bytes, std::vector<int32_t> eog);
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok);

  size_t size() const { return bytes_.size(); }
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }
  const std::vector<int32_t>& eog() const { return eog_; }
  bool is_eog(int32_t id) const;

  const std::vector<Node>& nodes() const { return nodes_; }
  std::span<const int32_t> node_tokens(uint32_t n) const {
    return {node_ids_.data() + nodes_[n].tok_begin, node_ids_.data() + nodes_[n].tok_end};
  }
  // The prefix a node stands for (the bytes of any token at or below it).
  std::string_view node_prefix(uint32_t n) const {
    return std::string_view(bytes(node_any_token_[n])).substr(0, nodes_[n].depth);
  }
  uint64_t serial() const { return serial_; }  // unique per instance: a cache key

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> node_ids_;
  std::vector<int32_t> node_any_token_;  // a token whose bytes start with the node's prefix
  uint64_t serial_;
};

}  // namespace pagoda::grammar
