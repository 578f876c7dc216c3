#include "gpu/step_upload.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda::gpu {

StepUpload StepUpload::pack(const Batch& batch, int32_t block_size, int32_t num_blocks) {
  const int32_t T = int32_t(batch.tokens.size()), S = batch.num_sequences(), G = batch.num_groups;
  if (T == 0 || S == 0) fail<InvalidArgument>("an empty step ({} tokens, {} sequences) has nothing to upload", T, S);
  if (block_size <= 0) fail<InvalidArgument>("block size {}", block_size);
  int32_t B = 0, L = 0;
  for (const auto& t : batch.block_tables) B = std::max(B, int32_t(t.size()));
  for (const auto& t : batch.tokens) L += t.logits;

  StepUpload u;
  auto& w = u.words_;
  w.reserve(kHeaderWords + (3 + size_t(G)) * T + size_t(S) * G * B + S + L);
  w = {T, S, G, B, L, block_size};
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
  for (int32_t i = 0; i < T; ++i)
    if (batch.tokens[size_t(i)].logits) w.push_back(i);
  return u;
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
  const auto logit = logit_rows();
  size_t next_logit = 0;
  for (int32_t i = 0; i < num_tokens(); ++i) {
    const bool wanted = next_logit < logit.size() && logit[next_logit] == i;
    next_logit += wanted;
    b.add(tokens()[size_t(i)], seq_of()[size_t(i)], positions()[size_t(i)], wanted);
  }
  return b;
}

}  // namespace pagoda::gpu
