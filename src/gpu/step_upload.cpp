#include "gpu/step_upload.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda::gpu {

namespace {

// The device reads these records as they are: every index is checked here.
void check_sampling(const StepSampling& sp, int32_t num_logits, int32_t vocab) {
  if (sp.empty()) return;
  if (sp.row_of.size() != size_t(num_logits))
    fail<InvalidArgument>("sampling for {} logits rows in a step of {}", sp.row_of.size(), num_logits);
  std::vector<int> used(sp.rows.size(), 0);
  for (int32_t r : sp.row_of) {
    if (r < -1 || r >= int32_t(sp.rows.size()) || (r >= 0 && used[size_t(r)]++ > 0))
      fail<InvalidArgument>("logits row mapped to sampling row {} of {} (or twice)", r, sp.rows.size());
  }
  if (std::count(used.begin(), used.end(), 1) != std::ptrdiff_t(sp.rows.size()))
    fail<InvalidArgument>("a sampling row no logits row names");
  auto in = [](int32_t begin, int32_t count, size_t size) {
    return begin >= 0 && count >= 0 && size_t(begin) + size_t(count) <= size;
  };
  for (const RowSampling& r : sp.rows) {
    if (!in(r.adjust_begin, r.adjust_count, sp.adjusts.size()) ||
        !in(r.penalty_begin, r.penalty_count, sp.penalties.size()))
      fail<InvalidArgument>("a sampling row's entries outside the step's lists");
    if (r.n_logprobs > SamplingParams::kMaxLogprobs) fail<InvalidArgument>("{} top logprobs", r.n_logprobs);
  }
  for (const LogitAdjust& a : sp.adjusts)
    if (a.token < 0 || a.token >= vocab)
      fail<InvalidArgument>("logit adjustment of token {} (vocab {})", a.token, vocab);
  for (const PenaltyEntry& e : sp.penalties)
    if (e.token < 0 || e.token >= vocab) fail<InvalidArgument>("penalty on token {} (vocab {})", e.token, vocab);
}

// The states section's buffers (-1: none), and for a step with state each
// sequence's tokens together and in order (the recurrence walks them so).
void check_states(std::span<const int32_t> in, std::span<const int32_t> out, int32_t num_buffers,
                  std::span<const int32_t> seq_of, std::span<const int32_t> positions) {
  bool any = false;
  for (size_t s = 0; s < in.size(); ++s) {
    for (int32_t b : {in[s], out[s]})
      if (b < kNoState || b >= num_buffers)
        fail<InvalidArgument>("sequence {} names state buffer {} of {}", s, b, num_buffers);
    if (in[s] != kNoState && in[s] == out[s])
      fail<InvalidArgument>("sequence {} reads and writes state buffer {}", s, in[s]);
    any = any || in[s] != kNoState || out[s] != kNoState;
  }
  if (!any) return;
  std::vector<bool> done(in.size(), false);
  for (size_t i = 0; i < seq_of.size(); ++i) {
    const auto s = size_t(seq_of[i]);
    const bool follows = i > 0 && seq_of[i - 1] == seq_of[i];
    if (follows ? positions[i] != positions[i - 1] + 1 : done[s])
      fail<InvalidArgument>("sequence {}'s tokens are apart or out of order in a step with recurrent state", s);
    done[s] = true;
  }
  // The kernels find each sequence's tokens from seq_of: one with none would read a range never written.
  for (size_t s = 0; s < done.size(); ++s)
    if (!done[s]) fail<InvalidArgument>("sequence {} has no tokens in a step with recurrent state", s);
}

}  // namespace

StepUpload StepUpload::pack(const Batch& batch, int32_t block_size, int32_t num_blocks, const StepSampling& sampling,
                            int32_t vocab, int32_t num_state_buffers) {
  const int32_t T = int32_t(batch.tokens.size()), S = batch.num_sequences(), G = batch.num_groups;
  if (T == 0 || S == 0) fail<InvalidArgument>("an empty step ({} tokens, {} sequences) has nothing to upload", T, S);
  if (block_size <= 0) fail<InvalidArgument>("block size {}", block_size);
  int32_t B = 0, L = 0;
  for (const auto& t : batch.block_tables) B = std::max(B, int32_t(t.size()));
  for (const auto& t : batch.tokens) L += t.logits;
  check_sampling(sampling, L, vocab);
  const int32_t D = int32_t(sampling.rows.size());

  StepUpload u;
  auto& w = u.words_;
  w.reserve(size_t(words_for(T, S, G, B, L)));
  w = {T, S, G, B, L, block_size, D};
  for (const auto& t : batch.tokens) w.push_back(t.token);
  for (const auto& t : batch.tokens) w.push_back(t.pos);
  for (const auto& t : batch.tokens) {
    if (t.seq < 0 || t.seq >= S) fail<InvalidArgument>("a token of sequence {} in a step of {} sequences", t.seq, S);
    w.push_back(t.seq);
  }
  for (int32_t g = 0; g < G; ++g) {
    for (const auto& t : batch.tokens) {
      const auto table = batch.table(t.seq, g);
      const size_t i = size_t(t.pos) / size_t(block_size);
      const BlockId b = t.pos >= 0 && i < table.size() ? table[i] : kNoBlock;
      if (b == kNoBlock)
        fail<InvalidArgument>("sequence {} has no block for position {} in KV group {} (a table of {})", t.seq, t.pos,
                              g, table.size());
      w.push_back(b * block_size + t.pos % block_size);
    }
  }
  for (int32_t s = 0; s < S; ++s) {
    for (int32_t g = 0; g < G; ++g) {
      const auto table = batch.table(s, g);
      for (BlockId b : table) {
        if (b != kNoBlock && (b < 0 || b >= num_blocks))
          fail<InvalidArgument>("sequence {} names block {} of a pool of {}", s, b, num_blocks);
        w.push_back(b);
      }
      w.insert(w.end(), size_t(B) - table.size(), kNoBlock);
    }
  }
  const size_t seq_len_at = w.size();
  w.insert(w.end(), size_t(S), 0);
  for (const auto& t : batch.tokens) w[seq_len_at + size_t(t.seq)] = std::max(w[seq_len_at + size_t(t.seq)], t.pos + 1);
  const size_t rows_at = w.size();
  w.insert(w.end(), size_t(L), 0);
  int32_t r = 0, back = D;  // logits rows in batch order; the next that comes back
  for (int32_t i = 0; i < T; ++i) {
    if (!batch.tokens[size_t(i)].logits) continue;
    const int32_t d = sampling.empty() ? -1 : sampling.row_of[size_t(r)];
    w[rows_at + size_t(d >= 0 ? d : back++)] = i;
    ++r;
  }
  for (const auto* states : {&batch.state_in, &batch.state_out})
    for (int32_t s = 0; s < S; ++s) w.push_back(size_t(s) < states->size() ? (*states)[size_t(s)] : kNoState);
  check_states(u.state_in(), u.state_out(), num_state_buffers, u.seq_of(), u.positions());
  if (D > 0) {
    u.sampling_.rows = sampling.rows;
    u.sampling_.adjusts = sampling.adjusts;
    u.sampling_.penalties = sampling.penalties;
  }
  return u;
}

StepUpload StepUpload::from_words(std::vector<int32_t> words, const StepSampling& sampling, int32_t num_blocks,
                                  int32_t num_state_buffers) {
  StepUpload u;
  u.words_ = std::move(words);
  const auto& w = u.words_;
  if (w.size() < size_t(kHeaderWords)) fail<InvalidArgument>("an upload of {} words has no header", w.size());
  const int64_t T = w[0], S = w[1], G = w[2], B = w[3], L = w[4], bs = w[5], D = w[6];
  if (T <= 0 || S <= 0 || G <= 0 || B < 0 || L < 0 || bs <= 0 || D < 0 || D > L)
    fail<InvalidArgument>("an upload's header: {} tokens, {} sequences, {} groups, {} wide, {} rows ({} sampled)", T, S,
                          G, B, L, D);
  if (int64_t(w.size()) != words_for(T, S, G, B, L))
    fail<InvalidArgument>("an upload of {} words for its header", w.size());
  for (int32_t s : u.seq_of())
    if (s < 0 || s >= S) fail<InvalidArgument>("a token of sequence {} in a step of {} sequences", s, S);
  for (int32_t g = 0; g < G; ++g)
    for (int32_t slot : u.slots(g))
      if (slot < -1 || int64_t(slot) >= int64_t(num_blocks) * bs)
        fail<InvalidArgument>("KV slot {} in a pool of {} blocks of {}", slot, num_blocks, bs);
  for (int32_t s = 0; s < S; ++s)
    for (int32_t g = 0; g < G; ++g)
      for (int32_t b : u.table(s, g))
        if (b != kNoBlock && (b < 0 || b >= num_blocks))
          fail<InvalidArgument>("sequence {} names block {} of a pool of {}", s, b, num_blocks);
  for (int32_t i = 0; i < T; ++i)
    if (u.positions()[size_t(i)] < 0 || u.positions()[size_t(i)] >= u.seq_len()[size_t(u.seq_of()[size_t(i)])])
      fail<InvalidArgument>("token {} at position {} past its sequence's length", i, u.positions()[size_t(i)]);
  for (int32_t r : u.logit_rows())
    if (r < 0 || r >= T) fail<InvalidArgument>("logits row of token {} in a step of {}", r, T);
  check_states(u.state_in(), u.state_out(), num_state_buffers, u.seq_of(), u.positions());
  if (int64_t(sampling.rows.size()) != D)
    fail<InvalidArgument>("{} sampling records for {} sampled rows", sampling.rows.size(), D);
  // The records' own checks, as pack() makes them: each sampled row names its record in order.
  StepSampling check = sampling;
  check.row_of.resize(size_t(L));
  for (int64_t i = 0; i < L; ++i) check.row_of[size_t(i)] = i < D ? int32_t(i) : -1;
  int32_t vocab = 0;  // the lists' tokens were checked against the vocabulary when they were packed
  for (const LogitAdjust& a : sampling.adjusts) vocab = std::max(vocab, a.token + 1);
  for (const PenaltyEntry& e : sampling.penalties) vocab = std::max(vocab, e.token + 1);
  check_sampling(check, int32_t(L), vocab);
  if (D > 0) {
    u.sampling_.rows = sampling.rows;
    u.sampling_.adjusts = sampling.adjusts;
    u.sampling_.penalties = sampling.penalties;
  }
  return u;
}

void StepUpload::check_attended_blocks(std::span<const int32_t> windows) const {
  if (windows.size() != size_t(num_groups()))
    fail<InvalidArgument>("{} KV group windows for a step of {} groups", windows.size(), num_groups());
  // Per sequence, the reads span from its first token's window to its last position.
  std::vector<int32_t> lo(size_t(num_seqs()), INT32_MAX), hi(size_t(num_seqs()), -1);
  for (int32_t t = 0; t < num_tokens(); ++t) {
    const auto s = size_t(seq_of()[size_t(t)]);
    lo[s] = std::min(lo[s], positions()[size_t(t)]);
    hi[s] = std::max(hi[s], positions()[size_t(t)]);
  }
  for (int32_t s = 0; s < num_seqs(); ++s) {
    if (hi[size_t(s)] < 0) continue;  // no tokens: nothing read
    for (int32_t g = 0; g < num_groups(); ++g) {
      const int32_t w = windows[size_t(g)];
      const int32_t first = w > 0 ? std::max(0, lo[size_t(s)] - w + 1) : 0;
      const auto t = table(s, g);
      for (int32_t i = first / block_size(); i <= hi[size_t(s)] / block_size(); ++i)
        if (size_t(i) >= t.size() || t[size_t(i)] == kNoBlock)
          fail<InvalidArgument>("sequence {} attends positions {}..{} but KV group {} has no block {}", s, first,
                                hi[size_t(s)], g, i);
    }
  }
}

Batch StepUpload::unpack(std::vector<std::vector<int32_t>>& tables) const {
  Batch b;
  b.num_groups = num_groups();
  tables.assign(size_t(num_seqs()) * num_groups(), {});
  for (int32_t s = 0; s < num_seqs(); ++s) {
    const size_t used = (size_t(seq_len()[size_t(s)]) + size_t(block_size()) - 1) / size_t(block_size());
    for (int32_t g = 0; g < num_groups(); ++g) {
      const auto t = table(s, g);
      tables[size_t(s) * num_groups() + size_t(g)].assign(t.begin(), t.begin() + std::min(used, t.size()));
    }
  }
  for (const auto& t : tables) b.block_tables.emplace_back(t);
  b.requests.assign(size_t(num_seqs()), 0);
  std::vector<bool> wanted(size_t(num_tokens()), false);
  for (int32_t i : logit_rows()) wanted[size_t(i)] = true;
  for (int32_t i = 0; i < num_tokens(); ++i)
    b.add(tokens()[size_t(i)], seq_of()[size_t(i)], positions()[size_t(i)], wanted[size_t(i)]);
  if (std::any_of(state_in().begin(), state_in().end(), [](int32_t x) { return x != kNoState; }) ||
      std::any_of(state_out().begin(), state_out().end(), [](int32_t x) { return x != kNoState; })) {
    b.state_in.assign(state_in().begin(), state_in().end());
    b.state_out.assign(state_out().begin(), state_out().end());
  }
  return b;
}

}  // namespace pagoda::gpu
