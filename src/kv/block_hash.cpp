// Block hashing: splitmix64's finalizer (a bijection with full avalanche) folded
// over the parent hash, the tokens two at a time, and the extra key. Not
// cryptographic; correctness never rests on it (hits compare the full key).
#include "kv/block_hash.h"

namespace pagoda {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t hash_extra_key(std::string_view extra_key) {
  if (extra_key.empty()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed
  for (unsigned char c : extra_key) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return mix(h ^ extra_key.size());
}

BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> tokens, uint64_t extra_key_hash) {
  uint64_t h = mix(parent + 0x9e3779b97f4a7c15ull);
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    h = mix(h ^ (uint64_t(uint32_t(tokens[i])) | uint64_t(uint32_t(tokens[i + 1])) << 32));
  }
  if (i < tokens.size()) h = mix(h ^ uint64_t(uint32_t(tokens[i])) ^ (1ull << 63));
  return mix(h ^ extra_key_hash ^ (uint64_t(tokens.size()) << 40));
}

}  // namespace pagoda
