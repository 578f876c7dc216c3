// The input of one forward pass: a flat list of tokens from any number of
// sequences, each with its position and whether its logits are wanted, plus
// each sequence's block tables (one per KV group, kv/kv_groups.h). One batch
// may mix prefill chunks of some sequences with single decode tokens of
// others; this is what the scheduler builds every step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/types.h"
#include "util/error.h"

namespace pagoda {

struct BatchToken {
  int32_t token = 0;
  int32_t seq = 0;  // the sequence: Batch::table(seq, group)
  int32_t pos = 0;  // position in its sequence; K/V land in slot pos of the sequence's blocks
  bool logits = false;
};

struct Batch {
  std::vector<BatchToken> tokens;
  // Block ids holding each sequence's K/V, one table per KV group, in
  // position order: position p of group g is in block table(s, g)[p /
  // block_size], slot p % block_size. A sliding group's entries behind its
  // window may be kNoBlock (-1). Flat: sequence s's tables start at
  // block_tables[s * num_groups].
  int32_t num_groups = 1;
  std::vector<std::span<const int32_t>> block_tables;
  // Who the pass is for, for a backend's logs and for fault injection: the
  // request each sequence serves (a request's choices share its id) and the
  // engine step (a step's retries share it).
  std::vector<uint64_t> requests;
  int64_t step = 0;
  // Recurrent state (kv/types.h), per sequence: the buffer the pass starts
  // from (kNoState: zeros) and the buffer it leaves the new state in, never
  // the same. A sequence's tokens in the pass are then its next ones, in
  // order. Empty for a model without recurrent layers.
  std::vector<StateBuffer> state_in, state_out;

  int num_sequences() const { return int(requests.size()); }
  std::span<const int32_t> table(int32_t seq, int32_t group = 0) const {
    return block_tables[size_t(seq) * size_t(num_groups) + size_t(group)];
  }
  // A sequence of a one-group batch.
  int add_sequence(std::span<const int32_t> table, uint64_t request = 0) {
    if (num_groups != 1) fail<InvalidArgument>("a batch of {} KV groups needs a table per group", num_groups);
    return add_sequence(std::span<const std::span<const int32_t>>(&table, 1), request);
  }
  // A sequence with its table of every group, in group order.
  int add_sequence(std::span<const std::span<const int32_t>> tables, uint64_t request = 0) {
    if (int32_t(tables.size()) != num_groups)
      fail<InvalidArgument>("a sequence brings {} block tables to a batch of {} KV groups", tables.size(), num_groups);
    block_tables.insert(block_tables.end(), tables.begin(), tables.end());
    requests.push_back(request);
    return num_sequences() - 1;
  }
  void set_state(int seq, StateBuffer in, StateBuffer out) {
    if (state_in.size() < size_t(num_sequences())) {
      state_in.resize(size_t(num_sequences()), kNoState);
      state_out.resize(size_t(num_sequences()), kNoState);
    }
    state_in[size_t(seq)] = in;
    state_out[size_t(seq)] = out;
  }
  void add(int32_t token, int32_t seq, int32_t pos, bool logits) { tokens.push_back({token, seq, pos, logits}); }
  int num_logits() const {
    int n = 0;
    for (const auto& t : tokens) n += t.logits;
    return n;
  }
};

}  // namespace pagoda
