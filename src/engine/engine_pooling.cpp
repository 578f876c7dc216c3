// The embedding half of EngineCore::step(): an embedding model's pass
// returns hidden states (ModelRunner::output_width() wide) for the positions
// its pooling takes, and each sequence folds them into one vector as its
// prompt is computed, chunk by chunk. When the whole prompt is in, the
// sequence ends with the vector (RequestOutput::embedding) and frees its
// blocks like any finished one.
#include <algorithm>
#include <cmath>

#include "engine/engine_core_state.h"

namespace pagoda {

std::pair<int32_t, int32_t> EngineCore::pooled_span(const SeqRun* run, const ScheduledSeq& sc) const {
  if (!run) return {0, 0};
  const int32_t begin = sc.seq->num_computed, end = std::min(begin + sc.num_tokens, sc.seq->num_prompt);
  const auto one = [&](int32_t pos) { return std::pair{pos, pos >= begin && pos < end ? 1 : 0}; };
  switch (pooling_) {
    case Pooling::rank:
      if (rank_last_) return one(sc.seq->num_prompt - 1);
      [[fallthrough]];
    case Pooling::cls: return run->pooled_next == 0 ? one(0) : std::pair{0, 0};
    case Pooling::last: return one(sc.seq->num_prompt - 1);
    case Pooling::mean: {
      const int32_t first = std::max(begin, run->pooled_next);
      return {first, std::max(0, end - first)};
    }
    default: return {0, 0};
  }
}

void EngineCore::after_pooling_forward(std::span<const ScheduledSeq> part) {
  const size_t W = size_t(out_width_);
  size_t row = 0;
  for (const auto& sc : part) {
    auto it = seqs_.find(sc.seq->id);
    SeqRun* run = it != seqs_.end() ? it->second.get() : nullptr;
    const auto [first, count] = pooled_span(run, sc);
    const float* rows = logits_.data() + row * W;
    row += size_t(count);  // in the pass whether or not its sequence still runs
    if (!run || run->finished) continue;
    SeqRun& s = *run;
    if (s.pooled.empty()) s.pooled.assign(W, 0.0f);
    for (int32_t i = 0; i < count; ++i)
      if (pooling_ == Pooling::mean)
        std::transform(s.pooled.begin(), s.pooled.end(), rows + size_t(i) * W, s.pooled.begin(), std::plus<float>());
      else
        std::copy(rows + size_t(i) * W, rows + size_t(i + 1) * W, s.pooled.begin());
    s.pooled_next = std::max(s.pooled_next, first + count);
    s.seq.num_computed += sc.num_tokens;
    commit(s.seq);
    if (s.seq.num_computed < s.seq.num_prompt) continue;
    if (s.choice == 0) s.req->num_cached_tokens = s.seq.num_cached;
    if (pooling_ == Pooling::mean)
      for (float& x : s.pooled) x /= float(s.seq.num_prompt);
    if (pooling_ == Pooling::rank) {
      try {
        runner_->rank(s.pooled);  // the classification head's scores
      } catch (const std::exception& e) {
        finish(s, FinishReason::error, std::string("the rank head failed: ") + e.what());
        continue;
      }
    }
    if (std::any_of(s.pooled.begin(), s.pooled.end(), [](float x) { return !std::isfinite(x); })) {
      finish(s, FinishReason::error, "the model produced a non-finite embedding");
      continue;
    }
    finish(s, FinishReason::stop);
  }
}

}  // namespace pagoda
