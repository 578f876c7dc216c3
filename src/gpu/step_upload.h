// One step's inputs for a GPU, packed into one int32 buffer, so that a step
// costs one host-to-device copy whatever its shape. The host does every
// check here: a block id out of the pool would be a write out of bounds on
// the device, a sticky fault that loses it, so no such batch is uploaded.
//
// Layout, in int32 words (T tokens, S sequences, G KV groups, B the longest
// block table in the step, L tokens whose logits are wanted, D of them
// sampled on the device):
//   header[kHeaderWords]  T, S, G, B, L, block_size, D
//   tokens[T]             token ids
//   positions[T]          each token's position in its sequence
//   seq_of[T]             each token's sequence, 0..S-1
//   slots[G][T]           where each token's K/V go: block * block_size + pos % block_size
//   tables[S][G][B]       block ids in position order, kNoBlock past a table's end
//                         (and where a sliding group gave blocks back)
//   seq_len[S]            positions each sequence's attention reads: its last position here + 1
//   logit_rows[L]         the tokens whose logits the step computes: the D the
//                         device samples first (as the sampling rows), then
//                         those whose logits come back, in batch order
//   state_in[S]           a hybrid model's recurrent state (kv/types.h): the
//   state_out[S]          buffer each sequence starts from and the one it
//                         leaves its new state in (kNoState: zeros in, or none
//                         at all); then a sequence's tokens are consecutive in
//                         the step, in position order
// The sampling records (sampling/row_sample.h) travel beside the words.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model_runner.h"  // StepSampling
#include "kv/batch.h"

namespace pagoda::gpu {

class StepUpload {
 public:
  static constexpr int kHeaderWords = 7;

  // Packs a batch; InvalidArgument (a bug upstream, never uploaded) where a
  // token's block is missing or a block id is outside [0, num_blocks), a
  // sequence's positions are not in order, or the batch is empty; where
  // `sampling` does not match the batch's logits rows or names a token
  // outside [0, vocab) or an entry outside its lists; and where a state
  // buffer is outside [0, num_state_buffers), a sequence's two are the same,
  // or, in a step with state, a sequence has no tokens or has them apart or
  // out of order.
  static StepUpload pack(const Batch& batch, int32_t block_size, int32_t num_blocks, const StepSampling& sampling = {},
                         int32_t vocab = 0, int32_t num_state_buffers = 0);
  // An upload from words already in the layout above (gpu/graph_buckets.h
  // builds padded ones), with the sampling records of its first D logits
  // rows. The same checks as pack() on what the device reads: InvalidArgument
  // where a section's size disagrees with the header, a sequence, row or block
  // id is out of range, or a slot is outside the pool (-1: the token's K/V are
  // not stored).
  static StepUpload from_words(std::vector<int32_t> words, const StepSampling& sampling, int32_t num_blocks,
                               int32_t num_state_buffers = 0);

  std::span<const int32_t> words() const { return words_; }
  size_t bytes() const { return words_.size() * sizeof(int32_t); }

  int32_t num_tokens() const { return words_[0]; }
  int32_t num_seqs() const { return words_[1]; }
  int32_t num_groups() const { return words_[2]; }
  int32_t table_width() const { return words_[3]; }  // B
  int32_t num_logits() const { return words_[4]; }
  int32_t block_size() const { return words_[5]; }
  int32_t num_sampled() const { return words_[6]; }  // D

  std::span<const int32_t> tokens() const { return section(tokens_at(), num_tokens()); }
  std::span<const int32_t> positions() const { return section(tokens_at() + num_tokens(), num_tokens()); }
  std::span<const int32_t> seq_of() const { return section(tokens_at() + 2 * size_t(num_tokens()), num_tokens()); }
  std::span<const int32_t> slots(int32_t group) const {
    return section(tokens_at() + (3 + size_t(group)) * num_tokens(), num_tokens());
  }
  std::span<const int32_t> table(int32_t seq, int32_t group) const {
    return section(tables_at() + (size_t(seq) * num_groups() + size_t(group)) * table_width(), table_width());
  }
  std::span<const int32_t> seq_len() const { return section(seq_len_at(), num_seqs()); }
  std::span<const int32_t> logit_rows() const { return section(seq_len_at() + num_seqs(), num_logits()); }
  std::span<const int32_t> state_in() const { return section(states_at(), num_seqs()); }
  std::span<const int32_t> state_out() const { return section(states_at() + num_seqs(), num_seqs()); }
  // Words of an upload of this shape.
  static int64_t words_for(int64_t T, int64_t S, int64_t G, int64_t B, int64_t L) {
    return kHeaderWords + (3 + G) * T + S * G * B + S + L + 2 * S;
  }
  // The D sampled rows' records (rows[i] is logit_rows()[i]'s) and their lists.
  std::span<const RowSampling> sampling_rows() const { return sampling_.rows; }
  std::span<const LogitAdjust> adjusts() const { return sampling_.adjusts; }
  std::span<const PenaltyEntry> penalties() const { return sampling_.penalties; }

  // InvalidArgument where a token's attention would read a block its table
  // lacks: positions pos - window + 1 .. pos of each group (`windows`, 0 for
  // full attention: from 0), where kNoBlock is an address before the pool.
  void check_attended_blocks(std::span<const int32_t> windows) const;

  // The batch back, as a device would read it: tables trimmed at their
  // first kNoBlock past the last position read (the requests and the step
  // number do not travel). `tables` keeps the tables' storage.
  Batch unpack(std::vector<std::vector<int32_t>>& tables) const;

 private:
  size_t tokens_at() const { return kHeaderWords; }
  size_t tables_at() const { return tokens_at() + (3 + size_t(num_groups())) * num_tokens(); }
  size_t seq_len_at() const { return tables_at() + size_t(num_seqs()) * num_groups() * table_width(); }
  size_t states_at() const { return seq_len_at() + size_t(num_seqs()) + size_t(num_logits()); }
  std::span<const int32_t> section(size_t at, size_t n) const { return std::span(words_).subspan(at, n); }

  std::vector<int32_t> words_;
  StepSampling sampling_;  // row_of unused here: logit_rows() says where each row goes
};

}  // namespace pagoda::gpu
