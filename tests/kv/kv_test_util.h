// Helpers for the KV block manager tests: token vectors and the engine's
// usual admit sequence (lookup, allocate, commit).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/block_manager.h"

namespace pagoda::kvtest {

inline std::vector<TokenId> iota_tokens(TokenId from, TokenId to) {
  std::vector<TokenId> v;
  for (TokenId t = from; t < to; ++t) v.push_back(t);
  return v;
}

inline std::vector<TokenId> repeat(TokenId t, int n) { return std::vector<TokenId>(size_t(n), t); }

inline std::vector<TokenId> cat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Blocks of `block_size` copies of 0, 1, 2, ... (vLLM's "common_token_ids").
inline std::vector<TokenId> block_runs(int num_blocks, int block_size) {
  std::vector<TokenId> v;
  for (int b = 0; b < num_blocks; ++b) v.insert(v.end(), size_t(block_size), TokenId(b));
  return v;
}

inline std::vector<BlockId> table(const BlockManager& m, SeqId seq) {
  auto t = m.block_table(seq);
  return {t.begin(), t.end()};
}

// Admits a prompt computed in one step: lookup, allocate, commit. Returns the
// prefix it reused; fails the test if the allocation did not fit.
inline CachedPrefix admit(BlockManager& m, SeqId seq, const std::vector<TokenId>& prompt,
                          const std::string& salt = {}) {
  CachedPrefix prefix = m.lookup_prefix(prompt, salt);
  AllocResult r = m.allocate(seq, int32_t(prompt.size()), prefix);
  EXPECT_TRUE(r.ok) << "admitting sequence " << seq << " missed " << r.missing_blocks << " blocks";
  if (r.ok) m.commit(seq, prompt, int32_t(prompt.size()));
  return prefix;
}

// audit() must pass; prints the violation otherwise.
inline void expect_clean(BlockManager& m) {
  auto v = m.audit();
  EXPECT_FALSE(v.has_value()) << invariant_name(v->invariant) << ": " << v->message;
}

}  // namespace pagoda::kvtest
