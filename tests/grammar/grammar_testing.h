// Helpers for the grammar tests: whole-string matching straight on the stack
// engine, and random strings of a grammar's language (random walks that end
// by the shortest completion once a length budget is spent).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_set.h"

namespace pagoda::grammar::testing {

inline bool full_match(const Grammar& g, std::string_view s) {
  StackEngine e(g);
  StackSet cur, next;
  e.initial(cur);
  for (char c : s) {
    if (!e.advance(cur, uint8_t(c), next)) return false;
    std::swap(cur, next);
  }
  return cur.has_finished();
}

inline bool prefix_match(const Grammar& g, std::string_view s) {
  StackEngine e(g);
  StackSet cur, next;
  e.initial(cur);
  for (char c : s) {
    if (!e.advance(cur, uint8_t(c), next)) return false;
    std::swap(cur, next);
  }
  return true;
}

inline std::vector<uint32_t> state_key(const StackSet& s) {
  std::vector<uint32_t> k(s.begin);
  k.push_back(UINT32_MAX);
  k.insert(k.end(), s.data.begin(), s.data.end());
  return k;
}

// The shortest bytes that finish from `start` (breadth-first over states).
inline std::string shortest_completion(StackEngine& e, const StackSet& start) {
  std::map<std::vector<uint32_t>, std::string> seen;
  std::deque<std::pair<StackSet, std::string>> q;
  q.push_back({start, ""});
  seen[state_key(start)] = "";
  StackSet next;
  while (!q.empty()) {
    auto [s, path] = std::move(q.front());
    q.pop_front();
    if (s.has_finished()) return path;
    for (int b = 0; b < 256; ++b) {
      if (!e.advance(s, uint8_t(b), next)) continue;
      auto k = state_key(next);
      if (seen.count(k)) continue;
      seen.emplace(std::move(k), path);
      q.push_back({next, path + char(b)});
    }
    if (seen.size() > 200000) break;
  }
  return std::string("\xFF<no completion>");
}

// A random string of the grammar's language: random allowed bytes (biased to
// ASCII so walks look like text), stopping at random where it may end, and
// finishing by the shortest completion after `budget` bytes.
inline std::string random_string(const Grammar& g, std::mt19937& rng, size_t budget = 60) {
  StackEngine e(g);
  StackSet cur, next;
  e.initial(cur);
  std::string out;
  while (out.size() < budget) {
    if (cur.has_finished() && rng() % 8 == 0) return out;
    std::vector<uint8_t> ok;
    for (int b = 0; b < 256; ++b)
      if (e.advance(cur, uint8_t(b), next)) ok.push_back(uint8_t(b));
    if (ok.empty()) return out;  // only the end is left
    std::vector<uint8_t> ascii;
    for (uint8_t b : ok)
      if (b < 0x80) ascii.push_back(b);
    const auto& pick = !ascii.empty() && rng() % 4 != 0 ? ascii : ok;
    const uint8_t b = pick[rng() % pick.size()];
    e.advance(cur, b, next);
    std::swap(cur, next);
    out += char(b);
  }
  return out + shortest_completion(e, cur);
}

}  // namespace pagoda::grammar::testing
