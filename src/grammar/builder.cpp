// Lowering Expr trees into flat rules, and the checks that make every
// reachable matcher state able to finish (see grammar.h).
#include <algorithm>
#include <deque>

#include "grammar/grammar.h"
#include "util/error.h"

namespace pagoda::grammar {

Expr Expr::literal(std::string_view bytes) {
  Expr e;
  for (char c : bytes) e.kids.push_back(byte_set(ByteSet::single(uint8_t(c))));
  return e;
}

Expr Expr::seq(std::vector<Expr> kids) {
  if (kids.size() == 1) return std::move(kids[0]);
  Expr e;
  for (auto& k : kids) {  // splice nested sequences: fewer rules after lowering
    if (k.kind == Kind::Seq) {
      for (auto& kk : k.kids) e.kids.push_back(std::move(kk));
    } else {
      e.kids.push_back(std::move(k));
    }
  }
  return e;
}

Expr Expr::alt(std::vector<Expr> kids) {
  if (kids.size() == 1) return std::move(kids[0]);
  // One-byte alternatives merge into one set: [abc] rather than a|b|c.
  bool all_bytes = !kids.empty();
  for (const auto& k : kids) all_bytes = all_bytes && k.kind == Kind::Bytes;
  if (all_bytes) {
    ByteSet s;
    for (const auto& k : kids)
      for (int i = 0; i < 4; ++i) s.w[i] |= k.bytes.w[i];
    return byte_set(s);
  }
  Expr e;
  e.kind = Kind::Alt;
  e.kids = std::move(kids);
  return e;
}

Expr Expr::repeat(Expr x, uint32_t min, uint32_t max) {
  Expr e;
  e.kind = Kind::Repeat;
  e.min = min;
  e.max = max;
  e.kids.push_back(std::move(x));
  return e;
}

uint32_t GrammarBuilder::rule(std::string_view name) {
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return it->second;
  if (names_.size() >= limits_.max_rules) fail<InvalidArgument>("grammar has more than {} rules", limits_.max_rules);
  const auto id = uint32_t(names_.size());
  names_.emplace_back(name);
  defined_.push_back(false);
  rules_.emplace_back();
  by_name_.emplace(std::string(name), id);
  return id;
}

uint32_t GrammarBuilder::fresh_rule(std::string_view hint) {
  for (size_t n = names_.size();; ++n) {
    std::string name = std::string(hint) + "-" + std::to_string(n);
    if (!by_name_.count(name)) return rule(name);
  }
}

void GrammarBuilder::count_elements(size_t n) {
  elements_ += n;
  if (elements_ > limits_.max_elements)
    fail<InvalidArgument>("grammar expands to more than {} elements (repetition bounds too large?)",
                          limits_.max_elements);
}

uint32_t GrammarBuilder::intern(const ByteSet& s) {
  // Sets repeat a lot (digits, string characters); a linear look at recent
  // ones keeps the table small without a hash of 256 bits.
  const size_t from = sets_.size() > 64 ? sets_.size() - 64 : 0;
  for (size_t i = from; i < sets_.size(); ++i)
    if (sets_[i] == s) return uint32_t(i);
  sets_.push_back(s);
  return uint32_t(sets_.size() - 1);
}

void GrammarBuilder::define(uint32_t r, Expr body) {
  if (defined_[r]) fail<InvalidArgument>("rule '{}' is defined twice", names_[r]);
  defined_[r] = true;
  std::vector<Alt> alts;
  if (body.kind == Expr::Kind::Alt) {
    for (const auto& k : body.kids) alts.push_back(lower_seq(k, r));
  } else {
    alts.push_back(lower_seq(body, r));
  }
  rules_[r] = std::move(alts);
}

std::vector<Element> GrammarBuilder::lower_seq(const Expr& e, uint32_t owner) {
  std::vector<Element> out;
  lower_into(e, owner, out);
  count_elements(out.size() + 1);
  return out;
}

uint32_t GrammarBuilder::lower_to_rule(const Expr& e, uint32_t owner) {
  const uint32_t r = fresh_rule(names_[owner]);
  define(r, e);
  return r;
}

void GrammarBuilder::lower_into(const Expr& e, uint32_t owner, std::vector<Element>& out) {
  switch (e.kind) {
    case Expr::Kind::Bytes: out.push_back({Element::Kind::Bytes, intern(e.bytes)}); break;
    case Expr::Kind::Ref: out.push_back({Element::Kind::Ref, e.rule}); break;
    case Expr::Kind::Seq:
      for (const auto& k : e.kids) lower_into(k, owner, out);
      break;
    case Expr::Kind::Alt: out.push_back({Element::Kind::Ref, lower_to_rule(e, owner)}); break;
    case Expr::Kind::Repeat: {
      const Expr& x = e.kids[0];
      // x as one element: a byte set or a rule (its own if it is more).
      Element one = x.kind == Expr::Kind::Bytes ? Element{Element::Kind::Bytes, intern(x.bytes)}
                    : x.kind == Expr::Kind::Ref ? Element{Element::Kind::Ref, x.rule}
                                                : Element{Element::Kind::Ref, lower_to_rule(x, owner)};
      const bool unbounded = e.max == Expr::kUnbounded;
      if (e.min > limits_.max_repeat || (!unbounded && e.max > limits_.max_repeat))
        fail<InvalidArgument>("repetition bound {} exceeds the limit {}", unbounded ? e.min : e.max,
                              limits_.max_repeat);
      if (!unbounded && e.max < e.min) fail<InvalidArgument>("repetition {{{},{}}} has max < min", e.min, e.max);
      count_elements(e.min);
      for (uint32_t i = 0; i < e.min; ++i) out.push_back(one);
      if (unbounded) {  // S ::= x S | ""  (right recursion: the matcher's tail call keeps stacks flat)
        const uint32_t s = fresh_rule(names_[owner]);
        defined_[s] = true;
        rules_[s] = {Alt{one, {Element::Kind::Ref, s}}, Alt{}};
        count_elements(4);
        out.push_back({Element::Kind::Ref, s});
      } else if (e.max > e.min) {  // O_k ::= x O_{k-1} | "", O_1 ::= x | ""
        uint32_t prev = 0;
        for (uint32_t k = 1; k <= e.max - e.min; ++k) {
          const uint32_t o = fresh_rule(names_[owner]);
          defined_[o] = true;
          rules_[o] = k == 1 ? std::vector<Alt>{Alt{one}, Alt{}}
                             : std::vector<Alt>{Alt{one, {Element::Kind::Ref, prev}}, Alt{}};
          count_elements(4);
          prev = o;
        }
        out.push_back({Element::Kind::Ref, prev});
      }
      break;
    }
  }
}

namespace {

// Fixed point over alternatives: an alternative holds once each of its
// elements holds (`base` decides byte sets); a rule holds once one
// alternative does. Worklist, so chains of 10^5 rules stay linear.
std::vector<bool> fixed_point(const std::vector<std::vector<std::vector<Element>>>& rules,
                              const std::vector<ByteSet>& sets, bool bytes_hold) {
  struct AltRef {
    uint32_t rule, alt;
  };
  std::vector<std::vector<AltRef>> users(rules.size());
  std::vector<std::vector<uint32_t>> pending(rules.size());
  std::vector<bool> holds(rules.size(), false);
  std::deque<uint32_t> ready;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    pending[r].resize(rules[r].size());
    for (uint32_t a = 0; a < rules[r].size(); ++a) {
      uint32_t n = 0;
      for (const auto& el : rules[r][a]) {
        if (el.kind == Element::Kind::Ref) {
          ++n;
          users[el.id].push_back({r, a});
        } else if (el.kind == Element::Kind::Bytes && !(bytes_hold && !sets[el.id].empty())) {
          n = UINT32_MAX / 2;  // never holds
        }
      }
      pending[r][a] = n;
      if (n == 0 && !holds[r]) holds[r] = true, ready.push_back(r);
    }
  }
  while (!ready.empty()) {
    const uint32_t s = ready.front();
    ready.pop_front();
    for (const auto& u : users[s]) {
      if (--pending[u.rule][u.alt] == 0 && !holds[u.rule]) holds[u.rule] = true, ready.push_back(u.rule);
    }
  }
  return holds;
}

}  // namespace

Grammar GrammarBuilder::finish(uint32_t root) {
  for (uint32_t r = 0; r < names_.size(); ++r)
    if (!defined_[r]) fail<InvalidArgument>("rule '{}' is used but not defined", names_[r]);
  // Drop alternatives that can never finish, so every state can still end.
  const auto productive = fixed_point(rules_, sets_, true);
  for (auto& alts : rules_) {
    std::erase_if(alts, [&](const Alt& a) {
      return std::any_of(a.begin(), a.end(), [&](const Element& el) {
        return el.kind == Element::Kind::Ref ? !productive[el.id] : sets_[el.id].empty();
      });
    });
  }
  if (rules_[root].empty())
    fail<InvalidArgument>("the grammar matches nothing: its language is empty or it can never end");
  // Left recursion: r -> s when s can come first in r (after rules matching "").
  const auto nullable = fixed_point(rules_, sets_, false);
  const size_t n = rules_.size();
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> path;
    auto firsts = [&](uint32_t r) {
      std::vector<uint32_t> f;
      for (const auto& a : rules_[r])
        for (const auto& el : a) {
          if (el.kind != Element::Kind::Ref) break;
          f.push_back(el.id);
          if (!nullable[el.id]) break;
        }
      return f;
    };
    color[start] = 1;
    path.push_back({start, firsts(start)});
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next.empty()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t s = next.back();
      next.pop_back();
      if (color[s] == 1)
        fail<InvalidArgument>("left recursion through rule '{}' (or a repetition of something that can match nothing)",
                              names_[s]);
      if (color[s] == 0) color[s] = 1, path.push_back({s, firsts(s)});
    }
  }
  Grammar g;
  g.sets = sets_;
  g.rule_names = names_;
  g.root = root;
  for (const auto& alts : rules_) {
    g.rule_alts.push_back(uint32_t(g.alt_begin.size()));
    for (const auto& a : alts) {
      g.alt_begin.push_back(uint32_t(g.elems.size()));
      g.elems.insert(g.elems.end(), a.begin(), a.end());
      g.elems.push_back({Element::Kind::End, 0});
    }
  }
  g.rule_alts.push_back(uint32_t(g.alt_begin.size()));
  return g;
}

std::string Grammar::describe() const {
  auto show_set = [](const ByteSet& s) {
    std::string out = "[";
    for (int b = 0; b < 256; ++b) {
      if (!s.test(uint8_t(b))) continue;
      int e = b;
      while (e + 1 < 256 && s.test(uint8_t(e + 1))) ++e;
      auto one = [](int c) {
        return c >= 0x21 && c < 0x7F && c != ']' && c != '\\' && c != '-' ? std::string(1, char(c))
                                                                          : fmt::format("\\x{:02X}", c);
      };
      out += one(b);
      if (e > b) {
        out += '-';
        out += one(e);
      }
      b = e;
    }
    return out + "]";
  };
  std::string out;
  for (size_t r = 0; r < rule_names.size(); ++r) {
    out += rule_names[r] + " ::=";
    for (uint32_t a = rule_alts[r]; a < rule_alts[r + 1]; ++a) {
      if (a > rule_alts[r]) out += " |";
      for (uint32_t p = alt_begin[a]; elems[p].kind != Element::Kind::End; ++p)
        out += " " + (elems[p].kind == Element::Kind::Ref ? rule_names[elems[p].id] : show_set(sets[elems[p].id]));
      if (elems[alt_begin[a]].kind == Element::Kind::End) out += " \"\"";
    }
    out += "\n";
  }
  return out;
}

}  // namespace pagoda::grammar
