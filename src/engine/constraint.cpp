// Mask filling for a batch: each matcher is independent (the shared mask
// tables are thread-safe), so the loop splits over sequences.
#include "engine/constraint.h"

#include <algorithm>
#include <limits>

#include "util/thread_pool.h"

namespace pagoda {

bool SeqConstraint::observe(std::string_view text) {
  window += text;
  const size_t at = window.find(after);
  if (at == std::string::npos) {
    // Only a tail shorter than the trigger can still be its beginning.
    if (window.size() >= after.size()) window.erase(0, window.size() - (after.size() - 1));
    return true;
  }
  std::string rest = window.substr(at + after.size());
  after.clear();
  window.clear();
  const size_t b = rest.find_first_not_of(" \t\r\n");
  return b == std::string::npos || matcher.accept_bytes(std::string_view(rest).substr(b));
}

namespace {

std::string_view drop_space(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string_view() : s.substr(b);
}

// Whether the output, `text` so far, may still be (or already is) the gate's opening.
bool opens(std::string_view gate, std::string_view text) {
  const std::string_view t = drop_space(text);
  return gate.starts_with(t) || t.starts_with(gate);
}

}  // namespace

bool SeqConstraint::gate_step(int32_t token) {
  const std::string& bytes = matcher.tables().vocab().bytes(token);
  const std::string text = window + bytes;
  if (!bytes.empty() && opens(gate, text)) {
    const std::string_view t = drop_space(text);
    if (!t.starts_with(gate)) {
      window = text;  // still undecided
      return true;
    }
    window = std::string(t.substr(gate.size()));
    gate.clear();
    return observe("");  // the opening may already hold the trigger
  }
  // A token of the grammar's (the mask allowed no other): the model answers without opening.
  gate.clear();
  after.clear();
  window.clear();
  return matcher.accept(token);
}

bool SeqConstraint::finished() const {
  if (!active()) return false;
  // Only the empty stack is left: the grammar ended and no byte may follow.
  const auto& st = matcher.state();
  return !matcher.is_terminated() && st.size() == 1 && st.stack(0).empty();
}

namespace {
// Gating: the tokens that keep the output a possible opening join the
// grammar's; after a partial opening ("<th") only they are left.
void add_gate_tokens(SeqConstraint& c) {
  if (!drop_space(c.window).empty()) std::fill(c.mask.begin(), c.mask.end(), 0u);
  const auto& vocab = c.matcher.tables().vocab();
  for (size_t t = 0; t < vocab.size(); ++t) {
    const std::string& b = vocab.bytes(int32_t(t));
    if (!b.empty() && opens(c.gate, c.window + b)) c.mask[t / 32] |= 1u << (t % 32);
  }
}

void fill_one(SeqConstraint& c) {
  c.error.clear();
  try {
    c.mask.resize(c.matcher.mask_words());
    c.matcher.fill_mask(c.mask);
    if (c.gating()) add_gate_tokens(c);
  } catch (const std::exception& e) {
    c.error = e.what();
    std::fill(c.mask.begin(), c.mask.end(), 0u);
  }
}
}  // namespace

void fill_masks(std::span<SeqConstraint* const> cs, ThreadPool* pool) {
  if (cs.size() < 2 || !pool) {
    for (SeqConstraint* c : cs) fill_one(*c);
    return;
  }
  // One index per sequence; `work` large enough that the pool always wakes.
  pool->parallel_for(
      cs.size(),
      [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) fill_one(*cs[i]);
      },
      1, SIZE_MAX);
}

bool mask_logits(const SeqConstraint& c, std::span<const float> logits, std::vector<float>& out) {
  out.assign(logits.begin(), logits.end());
  grammar::apply_token_mask(out, c.mask);
  // Checked on the logits, not the bits: a padded vocabulary's extra ids are never allowed.
  return std::any_of(out.begin(), out.end(), [](float x) { return x != -std::numeric_limits<float>::infinity(); });
}

}  // namespace pagoda
