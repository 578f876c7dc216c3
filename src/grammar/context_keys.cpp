// Static enumeration of mask-table keys (see context_keys.h).
#include "grammar/context_keys.h"

#include <algorithm>

namespace pagoda::grammar {
namespace {

struct KeyWalk {
  const Grammar& g;
  size_t frames, max_keys, budget;
  std::vector<uint32_t> pos_rule;            // position -> its rule
  std::vector<std::vector<uint32_t>> below;  // rule -> return positions that can lie under it
  std::vector<uint8_t> rootable;             // rule -> a stack may bottom out in it
  std::vector<std::vector<uint32_t>> out;
  std::vector<uint32_t> path;  // frames from the top down

  bool spend() { return budget > 0 && (--budget, out.size() < max_keys); }

  void emit(bool complete) {
    std::vector<uint32_t> key{complete ? 1u : 0u};
    key.insert(key.end(), path.rbegin(), path.rend());
    out.push_back(std::move(key));
  }

  // path's deepest frame is `p`; extends it downwards.
  void extend(uint32_t p) {
    const uint32_t r = pos_rule[p];
    if (rootable[r] && spend()) emit(true);
    if (path.size() == frames) {
      if (!below[r].empty() && spend()) emit(false);
      return;
    }
    for (uint32_t q : below[r]) {
      if (!spend()) return;
      path.push_back(q);
      extend(q);
      path.pop_back();
    }
  }
};

// Rules reachable from `r` through tail calls (r included).
void tail_closure(const std::vector<std::vector<uint32_t>>& tails, uint32_t r, std::vector<uint32_t>& seen_at,
                  uint32_t stamp, std::vector<uint32_t>& out) {
  out.assign(1, r);
  seen_at[r] = stamp;
  for (size_t i = 0; i < out.size(); ++i)
    for (uint32_t t : tails[out[i]])
      if (seen_at[t] != stamp) seen_at[t] = stamp, out.push_back(t);
}

}  // namespace

std::vector<std::vector<uint32_t>> context_keys(const Grammar& g, size_t frames, size_t max_keys) {
  const size_t rules = g.num_rules();
  KeyWalk w{g, std::max<size_t>(1, frames), max_keys, max_keys * 64, {}, {}, {}, {}, {}};
  w.pos_rule.assign(g.elems.size(), 0);
  std::vector<std::vector<uint32_t>> tails(rules);  // rule -> rules it tail-calls
  for (uint32_t r = 0; r < rules; ++r)
    for (uint32_t a = g.rule_alts[r]; a < g.rule_alts[r + 1]; ++a)
      for (uint32_t p = g.alt_begin[a];; ++p) {
        w.pos_rule[p] = r;
        const Element e = g.elems[p];
        if (e.kind == Element::Kind::End) break;
        if (e.kind == Element::Kind::Ref && g.elems[p + 1].kind == Element::Kind::End) tails[r].push_back(e.id);
      }
  w.below.assign(rules, {});
  std::vector<uint32_t> seen_at(rules, 0), reach;
  uint32_t stamp = 0;
  size_t work = w.budget;
  for (uint32_t p = 0; p + 1 < g.elems.size() && work > 0; ++p) {
    const Element e = g.elems[p];
    if (e.kind != Element::Kind::Ref || g.elems[p + 1].kind == Element::Kind::End) continue;
    tail_closure(tails, e.id, seen_at, ++stamp, reach);
    for (uint32_t t : reach) w.below[t].push_back(p + 1);
    work -= std::min(work, reach.size());
  }
  w.rootable.assign(rules, 0);
  tail_closure(tails, g.root, seen_at, ++stamp, reach);
  for (uint32_t t : reach) w.rootable[t] = 1;
  for (uint32_t p = 0; p < g.elems.size() && w.out.size() < max_keys && w.budget > 0; ++p) {
    if (g.elems[p].kind != Element::Kind::Bytes) continue;
    w.path.assign(1, p);
    w.extend(p);
  }
  return std::move(w.out);
}

}  // namespace pagoda::grammar
