#include "gpu/graph_buckets.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "util/error.h"

namespace pagoda::gpu {

bool graphable(const StepUpload& u) {
  const int32_t T = u.num_tokens();
  if (T > kMaxGraphTokens || T != u.num_seqs() || u.num_logits() != T) return false;
  std::vector<int32_t> per_seq(size_t(u.num_seqs()), 0);
  for (int32_t s : u.seq_of())
    if (++per_seq[size_t(s)] > 1) return false;  // T == S: no sequence twice means one token each
  std::vector<bool> wanted(size_t(T), false);
  for (int32_t r : u.logit_rows()) wanted[size_t(r)] = true;
  return std::all_of(wanted.begin(), wanted.end(), [](bool w) { return w; });
}

int32_t graph_bucket(int32_t tokens) {
  if (tokens < 1 || tokens > kMaxGraphTokens) fail<InvalidArgument>("no graph bucket for {} tokens", tokens);
  return int32_t(std::bit_ceil(uint32_t(tokens)));
}

int32_t graph_width(int32_t width, int32_t max_width) {
  if (width < 0 || width > max_width) fail<InvalidArgument>("tables {} wide in a workspace of {}", width, max_width);
  return std::max(width, std::min(int32_t(std::bit_ceil(uint32_t(std::max(width, 1)))), max_width));
}

GraphKey graph_key(const StepUpload& u, int32_t max_width) {
  return {graph_bucket(u.num_tokens()), graph_width(u.table_width(), max_width)};
}

StepUpload pad_for_graph(const StepUpload& u, const GraphKey& key, int32_t num_blocks, int32_t num_state_buffers) {
  if (!graphable(u)) fail<InvalidArgument>("a step that is not pure decode has no graph");
  const int32_t T = u.num_tokens(), S = u.num_seqs(), G = u.num_groups(), B = u.table_width();
  const int32_t P = key.tokens, W = key.width;  // padded tokens (= sequences = logits rows), width
  if (P < T || W < B || W < 1)
    fail<InvalidArgument>("a step of {} tokens, tables {} wide, padded to {} x {}", T, B, P, W);
  std::vector<int32_t> w;
  w.reserve(size_t(StepUpload::words_for(P, P, G, W, P)));
  w = {P, P, G, W, P, u.block_size(), u.num_sampled()};
  auto append = [&w](std::span<const int32_t> real, int32_t count, auto&& pad) {
    w.insert(w.end(), real.begin(), real.end());
    for (int32_t i = 0; i < count; ++i) w.push_back(pad(i));
  };
  const int32_t extra = P - T;
  append(u.tokens(), extra, [](int32_t) { return 0; });
  append(u.positions(), extra, [](int32_t) { return 0; });
  append(u.seq_of(), extra, [S](int32_t i) { return S + i; });                            // a sequence each
  for (int32_t g = 0; g < G; ++g) append(u.slots(g), extra, [](int32_t) { return -1; });  // stored nowhere
  for (int32_t s = 0; s < S; ++s)
    for (int32_t g = 0; g < G; ++g) {
      const auto t = u.table(s, g);
      w.insert(w.end(), t.begin(), t.end());
      w.insert(w.end(), size_t(W - B), kNoBlock);
    }
  for (int32_t s = S; s < P; ++s)
    for (int32_t g = 0; g < G; ++g) {
      w.push_back(0);  // block 0: in the pool, so position 0's read stays in bounds
      w.insert(w.end(), size_t(W - 1), kNoBlock);
    }
  append(u.seq_len(), extra, [](int32_t) { return 1; });
  append(u.logit_rows(), extra, [T](int32_t i) { return T + i; });
  append(u.state_in(), extra, [](int32_t) { return kNoState; });
  append(u.state_out(), extra, [](int32_t) { return kNoState; });
  StepSampling sampling;
  sampling.rows.assign(u.sampling_rows().begin(), u.sampling_rows().end());
  sampling.adjusts.assign(u.adjusts().begin(), u.adjusts().end());
  sampling.penalties.assign(u.penalties().begin(), u.penalties().end());
  return StepUpload::from_words(std::move(w), sampling, num_blocks, num_state_buffers);
}

}  // namespace pagoda::gpu
