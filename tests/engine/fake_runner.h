// A deterministic stand-in for the model, for engine and scheduler tests.
// It keeps, per KV slot, the token written there, and for every token it is
// asked logits for it first checks that the sequence's whole past is present
// through the block table (so a wrong block table, a missed copy-on-write or
// a bad prefix-cache hit is caught at once), and, with KV groups, that every
// other group holds the same tokens over what its window reads (so a block
// given back too early is caught); then it "predicts" next_token(past), a
// hash of every token so far.
//
// Recurrent mode (state_slots > 0, a hybrid model): the fake also keeps a
// state per buffer, a hash of the tokens folded into it and their count. A
// pass starts each sequence from state_in (nothing: kNoState), folds the
// sequence's tokens in, in order, and leaves the result in state_out; the
// logits then come from the state, the same hash fake_next_token() takes of
// the past. So a token applied twice after a failed pass, a state not reset
// for a new or resumed sequence, a fork without its copy or a stale buffer
// all give wrong tokens, and are counted in state_errors as they happen.
//
// Embedding mode (pooling set): rows are fake_hidden(past), kFakeHidden
// small integers from the same hash, and fake_embedding() is what a
// request's pooled vector must be: a position pooled twice or missed, or a
// wrong past, shows.
//
// Device-sampling mode (set_samples_rows(true), a GPU): the rows the engine
// asks it to sample are sampled with the device kernels' reference
// (sampling/row_sample.h) and only their answers come back.
//
// Non-causal mode (set_causal(false), an encoder): every pass must bring each
// sequence's whole input, positions 0..n-1; a pass that splits one is
// counted in split_inputs.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <algorithm>
#include <vector>

#include "engine/model_runner.h"

namespace pagoda::testing {

inline constexpr uint64_t kFakeStateZero = 1469598103934665603ull;
inline uint64_t fake_fold(uint64_t h, int32_t token) { return (h ^ uint64_t(token)) * 1099511628211ull; }
inline int32_t fake_token_of(uint64_t h, int32_t vocab) { return int32_t(h % uint64_t(vocab)); }

inline constexpr int32_t kFakeHidden = 4;

inline std::vector<float> fake_hidden(const std::vector<int32_t>& past) {
  uint64_t h = kFakeStateZero;
  for (int32_t t : past) h = fake_fold(h, t);
  std::vector<float> row(kFakeHidden);
  for (int i = 0; i < kFakeHidden; ++i) row[size_t(i)] = float((h >> (8 * i)) % 7) - 3.0f;
  return row;
}

// The pooled vector of a prompt, summed in position order as the engine sums it.
inline std::vector<float> fake_embedding(const std::vector<int32_t>& prompt, Pooling pooling) {
  const auto prefix = [&](size_t n) {
    return fake_hidden(std::vector<int32_t>(prompt.begin(), prompt.begin() + ptrdiff_t(n)));
  };
  if (pooling == Pooling::cls) return prefix(1);
  if (pooling == Pooling::last) return prefix(prompt.size());
  std::vector<float> sum(kFakeHidden, 0.0f);
  for (size_t n = 1; n <= prompt.size(); ++n) {
    const auto row = prefix(n);
    for (int i = 0; i < kFakeHidden; ++i) sum[size_t(i)] += row[size_t(i)];
  }
  for (float& x : sum) x /= float(prompt.size());
  return sum;
}

inline int32_t fake_next_token(const std::vector<int32_t>& past, int32_t vocab) {
  uint64_t h = kFakeStateZero;
  for (int32_t t : past) h = fake_fold(h, t);
  // Avoid the end-of-generation id 2 most of the time, but not always.
  return fake_token_of(h, vocab);
}

class FakeRunner : public ModelRunner {
 public:
  // windows: the KV groups' (kv/kv_groups.h); group 0 must attend to
  // everything, as the fake predicts from the whole past.
  // state_slots > 0: recurrent mode (see above), with state_checkpoints
  // buffers after the slots' (prefix caching).
  FakeRunner(int32_t vocab, int32_t num_blocks, int32_t block_size, int32_t context, std::vector<int32_t> windows = {0},
             int32_t state_slots = 0, int32_t state_checkpoints = 0)
      : vocab_(vocab),
        block_size_(block_size),
        context_(context),
        windows_(std::move(windows)),
        slots_(size_t(num_blocks) * block_size, -1),
        state_slots_(state_slots),
        state_checkpoints_(state_checkpoints),
        states_(size_t(2 * state_slots + state_checkpoints), {kFakeStateZero, -1}) {
    if (windows_.empty() || windows_[0] != 0) throw std::logic_error("fake model: group 0 must attend to everything");
  }

  int32_t vocab_size() const override { return vocab_; }
  int32_t context_length() const override { return context_; }
  std::vector<int32_t> kv_group_windows() const override { return windows_; }
  void copy_blocks(std::span<const BlockCopy> copies) override {
    copies_made += int64_t(copies.size());
    for (const auto& c : copies)
      for (int32_t i = 0; i < block_size_; ++i)
        slots_[size_t(c.dst) * block_size_ + i] = slots_[size_t(c.src) * block_size_ + i];
  }
  int32_t state_slots() const override { return state_slots_; }
  int32_t state_checkpoints() const override { return state_checkpoints_; }
  Pooling pooling() const override { return pooling_; }
  int32_t output_width() const override { return pooling_ == Pooling::none ? vocab_ : kFakeHidden; }
  void set_pooling(Pooling p) { pooling_ = p; }
  bool causal() const override { return causal_; }
  void set_causal(bool on) { causal_ = on; }
  void copy_states(std::span<const StateCopy> copies) override {
    for (const auto& c : copies) {
      state_copies_made += 1;
      if (!valid_copy_buffer(c.src) || !valid_copy_buffer(c.dst) || c.src == c.dst || states_[size_t(c.src)].len < 0) {
        ++state_errors;
        continue;
      }
      states_[size_t(c.dst)] = states_[size_t(c.src)];
    }
  }
  bool samples_rows() const override { return samples_rows_; }
  void set_samples_rows(bool on) { samples_rows_ = on; }
  void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                       std::vector<SampledRow>& sampled) override {
    sampled.clear();
    if (sampling.empty()) return forward(batch, logits);
    if (!samples_rows_) throw std::logic_error("fake model: asked to sample rows it does not sample");
    std::vector<float> rows;
    forward(batch, rows);
    const size_t V = size_t(vocab_);
    if (sampling.row_of.size() * V != rows.size()) throw std::logic_error("fake model: sampling for other rows");
    sampled.resize(sampling.rows.size());
    logits.clear();
    for (size_t r = 0; r < sampling.row_of.size(); ++r) {
      const std::span<const float> row = std::span<const float>(rows).subspan(r * V, V);
      const int32_t i = sampling.row_of[r];
      if (i < 0) {
        logits.insert(logits.end(), row.begin(), row.end());
        continue;
      }
      const RowSampling& rs = sampling.rows[size_t(i)];
      sampled[size_t(i)] = sample_row_reference(
          row, rs, std::span(sampling.adjusts).subspan(size_t(rs.adjust_begin), size_t(rs.adjust_count)),
          std::span(sampling.penalties).subspan(size_t(rs.penalty_begin), size_t(rs.penalty_count)));
      ++rows_sampled;
    }
  }
  void forward(const Batch& batch, std::vector<float>& logits) override {
    ++calls;
    if (batch.num_groups != int32_t(windows_.size())) throw std::logic_error("fake model: wrong number of KV groups");
    if (!causal_) count_split_inputs(batch);
    for (const auto& t : batch.tokens)
      for (int32_t g = 0; g < batch.num_groups; ++g) slot(batch, t.seq, g, t.pos) = t.token;
    // The state after each token, in batch order (for its logits).
    std::vector<uint64_t> token_state(batch.tokens.size(), 0);
    if (state_slots_ > 0) run_states(batch, token_state);
    // Failures come after the writes, as a real pass may die halfway.
    if (fail_calls.count(calls)) throw std::runtime_error("fake model: call " + std::to_string(calls) + " failed");
    for (int32_t s = 0; s < batch.num_sequences(); ++s)
      if (fail_for_token >= 0 && slot(batch, s, 0, 0) == fail_for_token)
        throw std::runtime_error("fake model: cannot run token " + std::to_string(fail_for_token));
    logits.clear();
    for (const auto& t : batch.tokens) {
      if (!t.logits) continue;
      std::vector<int32_t> past;
      for (int32_t p = 0; p <= t.pos; ++p) {
        const int32_t v = slot(batch, t.seq, 0, p);
        if (v < 0) throw std::logic_error("fake model: position " + std::to_string(p) + " was never written");
        past.push_back(v);
      }
      // Every other group serves what its window reads, the same tokens.
      for (int32_t g = 1; g < batch.num_groups; ++g) {
        const int32_t w = windows_[size_t(g)];
        for (int32_t p = w > 0 ? std::max(0, t.pos - w + 1) : 0; p <= t.pos; ++p)
          if (slot(batch, t.seq, g, p) != past[size_t(p)])
            throw std::logic_error("fake model: group " + std::to_string(g) + " holds the wrong K/V at position " +
                                   std::to_string(p));
      }
      if (pooling_ != Pooling::none) {
        const auto row = fake_hidden(past);
        logits.insert(logits.end(), row.begin(), row.end());
        continue;
      }
      std::vector<float> row(size_t(vocab_), 0.0f);
      int32_t next = fake_next_token(past, vocab_);
      if (state_slots_ > 0) {
        // The recurrent layers decide: the state must hold the whole past.
        const int32_t from_state = fake_token_of(token_state[size_t(&t - batch.tokens.data())], vocab_);
        state_errors += from_state != next;
        next = from_state;
      }
      row[size_t(next)] = 10.0f;
      if (t.pos == 0 && t.token == nan_for_token) row[0] = std::numeric_limits<float>::quiet_NaN();
      logits.insert(logits.end(), row.begin(), row.end());
    }
  }
  int64_t calls = 0;
  int64_t rows_sampled = 0;       // device-sampling mode: rows it sampled
  int64_t copies_made = 0;        // blocks copied for copy-on-write
  int64_t state_copies_made = 0;  // state buffers copied for forks
  int64_t state_errors = 0;       // recurrent mode: wrong buffers, tokens out of order, states off the past
  int64_t split_inputs = 0;       // non-causal mode: sequences a pass brought in part
  int64_t whole_inputs = 0;       // non-causal mode: sequences a pass brought whole
  int32_t nan_for_token = -1;     // a sequence starting with this token gets NaN logits there
  int32_t fail_for_token = -1;    // every pass carrying a sequence that starts with it throws
  std::set<int64_t> fail_calls;   // these calls (1 = the first) throw

 private:
  bool samples_rows_ = false;
  struct State {
    uint64_t hash = kFakeStateZero;
    int32_t len = -1;  // tokens folded in; -1: never written
  };
  // A pass reads and writes slots' buffers only; copies reach the checkpoints too.
  bool valid_buffer(StateBuffer b) const { return b >= 0 && b < 2 * state_slots_; }
  bool valid_copy_buffer(StateBuffer b) const { return b >= 0 && size_t(b) < states_.size(); }

  void run_states(const Batch& batch, std::vector<uint64_t>& token_state) {
    const int n = batch.num_sequences();
    if (int(batch.state_in.size()) != n || int(batch.state_out.size()) != n) {
      ++state_errors;
      throw std::logic_error("fake model: the batch has no state buffers for every sequence");
    }
    std::vector<State> now(static_cast<size_t>(n));
    std::vector<uint8_t> used(states_.size(), 0);
    for (int s = 0; s < n; ++s) {
      const StateBuffer in = batch.state_in[size_t(s)], out = batch.state_out[size_t(s)];
      const bool bad_in = in != kNoState && (!valid_buffer(in) || states_[size_t(in)].len < 0);
      if (bad_in || !valid_buffer(out) || in == out || used[size_t(out)]) {
        ++state_errors;
        throw std::logic_error("fake model: bad state buffers " + std::to_string(in) + " -> " + std::to_string(out));
      }
      used[size_t(out)] = 1;
      now[size_t(s)] = in == kNoState ? State{kFakeStateZero, 0} : states_[size_t(in)];
    }
    for (size_t i = 0; i < batch.tokens.size(); ++i) {
      const auto& t = batch.tokens[i];
      State& st = now[size_t(t.seq)];
      state_errors += t.pos != st.len;  // a token skipped or applied twice
      st.hash = fake_fold(st.hash, t.token);
      st.len = t.pos + 1;
      token_state[i] = st.hash;
    }
    for (int s = 0; s < n; ++s) states_[size_t(batch.state_out[size_t(s)])] = now[size_t(s)];
  }

  // Non-causal: each sequence's positions in the pass must be exactly 0..n-1.
  void count_split_inputs(const Batch& batch) {
    std::vector<std::set<int32_t>> positions(size_t(batch.num_sequences()));
    std::vector<size_t> tokens(positions.size());
    for (const auto& t : batch.tokens) {
      positions[size_t(t.seq)].insert(t.pos);
      ++tokens[size_t(t.seq)];
    }
    for (size_t s = 0; s < positions.size(); ++s) {
      const auto& p = positions[s];
      const bool whole = !p.empty() && *p.begin() == 0 && *p.rbegin() + 1 == int32_t(p.size()) && tokens[s] == p.size();
      (whole ? whole_inputs : split_inputs) += 1;
    }
  }

  int32_t& slot(const Batch& b, int32_t seq, int32_t group, int32_t pos) {
    const auto table = b.table(seq, group);
    if (size_t(pos / block_size_) >= table.size()) throw std::logic_error("fake model: position outside the table");
    const int32_t block = table[size_t(pos / block_size_)];
    if (block < 0)
      throw std::logic_error("fake model: position " + std::to_string(pos) + " of group " + std::to_string(group) +
                             " was given back");
    return slots_[size_t(block) * block_size_ + size_t(pos % block_size_)];
  }
  int32_t vocab_, block_size_, context_;
  std::vector<int32_t> windows_;
  std::vector<int32_t> slots_;
  int32_t state_slots_ = 0, state_checkpoints_ = 0;
  std::vector<State> states_;  // per state buffer: 2 per slot, then the checkpoints
  Pooling pooling_ = Pooling::none;
  bool causal_ = true;
};

}  // namespace pagoda::testing
