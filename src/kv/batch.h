// The input of one forward pass: a flat list of tokens from any number of
// sequences, each with its position and whether its logits are wanted, plus
// each sequence's block table. One batch may mix prefill chunks of some
// sequences with single decode tokens of others; this is what the scheduler
// builds every step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda {

struct BatchToken {
  int32_t token = 0;
  int32_t seq = 0;  // index into Batch::block_tables
  int32_t pos = 0;  // position in its sequence; K/V land in slot pos of the sequence's blocks
  bool logits = false;
};

struct Batch {
  std::vector<BatchToken> tokens;
  // Block ids holding each sequence's K/V, in position order: position p is in
  // block block_tables[s][p / block_size], slot p % block_size.
  std::vector<std::span<const int32_t>> block_tables;
  // Who the pass is for, for a backend's logs and for fault injection: the
  // request each sequence serves (a request's choices share its id) and the
  // engine step (a step's retries share it).
  std::vector<uint64_t> requests;
  int64_t step = 0;

  int add_sequence(std::span<const int32_t> table, uint64_t request = 0) {
    block_tables.push_back(table);
    requests.push_back(request);
    return int(block_tables.size()) - 1;
  }
  void add(int32_t token, int32_t seq, int32_t pos, bool logits) { tokens.push_back({token, seq, pos, logits}); }
  int num_logits() const {
    int n = 0;
    for (const auto& t : tokens) n += t.logits;
    return n;
  }
};

}  // namespace pagoda
