// Exact numeric ranges and multiples as digit grammars (see json_number.h).
//
// Two constructions:
//   - DigitLang: the decimal texts of non-negative N in [lo, hi] (hi may be
//     open) with N % k == 0, written with q fraction digits. It is a digit
//     automaton: while the prefix still equals a bound's prefix the path is
//     "tight" (one chain per bound); once below/above it, a shared rule per
//     (digits left, N mod k) finishes. k = 1, q = 0 is a plain integer range.
//   - frac_lang: fraction digit strings 0.s within a bound's fraction, for
//     numbers whose integer part equals a bound's integer part.
#include "grammar/json_number.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

namespace pagoda::grammar {
namespace {
namespace num {  // named: unity builds merge anonymous namespaces across files

Expr lit(std::string_view s) { return Expr::literal(s); }
Expr digits(int lo, int hi) { return Expr::byte_set(ByteSet::range(uint8_t('0' + lo), uint8_t('0' + hi))); }

// An exact decimal: integer digits (no leading zeros, "0" for zero) and
// fraction digits (no trailing zeros); zero is never negative.
struct Decimal {
  bool neg = false;
  std::string ip = "0";
  std::string fp;
};

std::string strip_leading_zeros(const std::string& s) {
  const size_t i = s.find_first_not_of('0');
  return i == std::string::npos ? "0" : s.substr(i);
}

Decimal parse_decimal(const std::string& text, const char* key) {
  auto bad = [&] { fail<InvalidArgument>("{} must be a number, got '{}'", key, text); };
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && text[i] == '-') neg = true, ++i;
  std::string mant;
  long point = -1;
  for (; i < text.size() && (std::isdigit(uint8_t(text[i])) || text[i] == '.'); ++i) {
    if (text[i] != '.') {
      mant += text[i];
    } else if (point >= 0) {
      bad();
    } else {
      point = long(mant.size());
    }
  }
  if (mant.empty()) bad();
  if (point < 0) point = long(mant.size());
  long exp = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    bool eneg = false;
    if (++i < text.size() && (text[i] == '+' || text[i] == '-')) eneg = text[i++] == '-';
    if (i == text.size()) bad();
    for (; i < text.size(); ++i) {
      if (!std::isdigit(uint8_t(text[i]))) bad();
      exp = std::min(exp * 10 + (text[i] - '0'), 1000000L);  // clamped: refused as out of range below
    }
    if (eneg) exp = -exp;
  }
  if (i != text.size()) bad();
  Decimal d;
  const size_t lz = mant.find_first_not_of('0');
  if (lz == std::string::npos) return d;  // zero
  long pos = point + exp - long(lz);      // where the point falls in the significant digits
  mant = mant.substr(lz);
  while (mant.back() == '0') mant.pop_back();
  const long lim = long(kMaxNumberDigits);
  if (long(mant.size()) > lim || pos > lim || pos < -lim)
    fail<InvalidArgument>("{} {} is out of range (at most {} digits either side of the point)", key, text, lim);
  d.neg = neg;
  if (pos <= 0) {
    d.fp = std::string(size_t(-pos), '0') + mant;
  } else if (pos >= long(mant.size())) {
    d.ip = mant + std::string(size_t(pos) - mant.size(), '0');
  } else {
    d.ip = mant.substr(0, size_t(pos));
    d.fp = mant.substr(size_t(pos));
  }
  return d;
}

int cmp_mag(const std::string& a, const std::string& b) {  // digit strings without leading zeros
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
}

int cmp(const Decimal& a, const Decimal& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  int c = cmp_mag(a.ip, b.ip);
  if (c == 0) c = a.fp.compare(b.fp) < 0 ? -1 : a.fp.compare(b.fp) > 0 ? 1 : 0;  // no trailing zeros: lexicographic
  return a.neg ? -c : c;
}

std::string inc(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') return ++s[i], s;
    s[i] = '0';
  }
  return "1" + s;
}

std::string dec(std::string s) {  // s > 0
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') return --s[i], strip_leading_zeros(s);
    s[i] = '9';
  }
  return "0";
}

// A signed integer: magnitude digits, never "-0".
struct Int {
  bool neg = false;
  std::string mag = "0";
};
Int make_int(bool neg, std::string mag) {
  mag = strip_leading_zeros(mag);
  return {neg && mag != "0", mag};
}
int cmp(const Int& a, const Int& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  const int c = cmp_mag(a.mag, b.mag);
  return a.neg ? -c : c;
}
Int plus_one(const Int& x) { return x.neg ? make_int(true, dec(x.mag)) : make_int(false, inc(x.mag)); }
Int minus_one(const Int& x) {
  if (x.neg) return make_int(true, inc(x.mag));
  return x.mag == "0" ? make_int(true, "1") : make_int(false, dec(x.mag));
}

// The least (lower) or greatest (upper) integer N with N/10^q inside the bound.
Int scaled_bound(const Decimal& d, uint32_t q, bool lower, bool exclusive) {
  std::string fp = d.fp;
  if (fp.size() < q) fp.append(q - fp.size(), '0');
  const Int whole = make_int(d.neg, d.ip + fp.substr(0, q));
  const bool exact = fp.size() == q;  // no digits left below 10^-q
  if (exact) return exclusive ? (lower ? plus_one(whole) : minus_one(whole)) : whole;
  // Between two integers: truncation toward zero is the ceil of a negative, the floor of a positive.
  if (lower) return d.neg ? whole : plus_one(whole);
  return d.neg ? minus_one(whole) : whole;
}

// The decimal texts of non-negative multiples of k in a range, q fraction digits.
class DigitLang {
 public:
  DigitLang(GrammarBuilder& b, uint32_t k, uint32_t q) : b_(b), k_(k), q_(q) {}

  std::optional<Expr> range(const std::string& lo, const std::optional<std::string>& hi) {
    if (hi && cmp_mag(lo, *hi) > 0) return std::nullopt;
    const size_t lmin = plen(lo), lmax = hi ? plen(*hi) : lmin;
    if (uint64_t(k_) * (lmax + 2) > kMaxNumberStates)
      fail<NumberTooComplex>("its digit automaton would need over {} states", kMaxNumberStates);
    std::vector<Expr> alts;
    for (size_t len = lmin; len <= lmax; ++len) {
      std::string a = pad(lo, len);
      if (len != lmin) a.assign(len, '0'), a[0] = '1';  // the least len-digit number
      std::string z = hi && len == lmax ? pad(*hi, len) : std::string(len, '9');
      if (auto e = tight(a, z, 0, true, true, 0)) alts.push_back(std::move(*e));
    }
    if (!hi) {  // longer than lo: a first digit 1-9, then at least lmin more
      for (auto& [r, set] : groups(0, 1, 9))
        if (auto e = at_least(lmin, r)) alts.push_back(Expr::seq({Expr::byte_set(set), std::move(*e)}));
    }
    if (alts.empty()) return std::nullopt;
    return Expr::alt(std::move(alts));
  }

 private:
  size_t plen(const std::string& n) const { return std::max(n.size(), size_t(q_) + 1); }
  static std::string pad(const std::string& n, size_t len) { return std::string(len - n.size(), '0') + n; }
  uint32_t step(uint32_t r, int d) const { return uint32_t((uint64_t(r) * 10 + uint32_t(d)) % k_); }

  // Digits lo..hi after residue r, grouped by the residue they lead to.
  std::map<uint32_t, ByteSet> groups(uint32_t r, int lo, int hi) const {
    std::map<uint32_t, ByteSet> g;
    for (int d = lo; d <= hi; ++d) g[step(r, d)].set(uint8_t('0' + d));
    return g;
  }
  // The point goes before the digit that leaves q digits to write.
  Expr point_then(size_t remaining, Expr e) const {
    return q_ > 0 && remaining == q_ ? Expr::seq({lit("."), std::move(e)}) : std::move(e);
  }
  uint32_t new_rule() {
    if (++rules_ > kMaxNumberStates)
      fail<NumberTooComplex>("its digit automaton would need over {} states", kMaxNumberStates);
    return b_.fresh_rule("num");
  }

  // Exactly m more digits, ending at residue 0.
  std::optional<Expr> exact(size_t m, uint32_t r) {
    if (m == 0) return r == 0 ? std::optional<Expr>(Expr::empty()) : std::nullopt;
    const auto key = std::make_pair(m, r);
    if (auto it = exact_.find(key); it != exact_.end())
      return it->second ? std::optional<Expr>(Expr::ref(*it->second)) : std::nullopt;
    std::vector<Expr> alts;
    for (auto& [r2, set] : groups(r, 0, 9))
      if (auto e = exact(m - 1, r2)) alts.push_back(Expr::seq({Expr::byte_set(set), std::move(*e)}));
    if (alts.empty()) return exact_[key] = std::nullopt, std::nullopt;
    const uint32_t rule = new_rule();
    b_.define(rule, point_then(m, Expr::alt(std::move(alts))));
    exact_[key] = rule;
    return Expr::ref(rule);
  }

  // Any number of integer digits, then the point and q fraction digits.
  Expr open(uint32_t r) {
    if (open_.empty()) {
      for (uint32_t i = 0; i < k_; ++i) open_.push_back(new_rule());
      for (uint32_t i = 0; i < k_; ++i) {
        std::vector<Expr> alts;
        for (auto& [r2, set] : groups(i, 0, 9)) alts.push_back(Expr::seq({Expr::byte_set(set), Expr::ref(open_[r2])}));
        if (auto e = exact(q_, i)) alts.push_back(std::move(*e));
        b_.define(open_[i], Expr::alt(std::move(alts)));
      }
    }
    return Expr::ref(open_[r]);
  }

  // At least m more digits (m >= q).
  std::optional<Expr> at_least(size_t m, uint32_t r) {
    if (m <= q_) return open(r);
    const auto key = std::make_pair(m, r);
    if (auto it = least_.find(key); it != least_.end()) return Expr::ref(it->second);
    std::vector<Expr> alts;
    for (auto& [r2, set] : groups(r, 0, 9))
      if (auto e = at_least(m - 1, r2)) alts.push_back(Expr::seq({Expr::byte_set(set), std::move(*e)}));
    const uint32_t rule = new_rule();
    b_.define(rule, Expr::alt(std::move(alts)));
    least_[key] = rule;
    return Expr::ref(rule);
  }

  // Digits pos.. of a len-digit string in [a, z] (ta / tb: the prefix still equals a's / z's).
  std::optional<Expr> tight(const std::string& a, const std::string& z, size_t pos, bool ta, bool tb, uint32_t r) {
    const size_t len = a.size();
    if (pos == len) return r == 0 ? std::optional<Expr>(Expr::empty()) : std::nullopt;
    const int lo = ta ? a[pos] - '0' : 0, hi = tb ? z[pos] - '0' : 9;
    std::vector<Expr> alts;
    std::map<uint32_t, ByteSet> free;
    for (int d = lo; d <= hi; ++d) {
      const bool na = ta && d == a[pos] - '0', nb = tb && d == z[pos] - '0';
      if (!na && !nb) {
        free[step(r, d)].set(uint8_t('0' + d));
      } else if (auto e = tight(a, z, pos + 1, na, nb, step(r, d))) {
        alts.push_back(Expr::seq({lit(std::string(1, char('0' + d))), std::move(*e)}));
      }
    }
    for (auto& [r2, set] : free)
      if (auto e = exact(len - pos - 1, r2)) alts.push_back(Expr::seq({Expr::byte_set(set), std::move(*e)}));
    if (alts.empty()) return std::nullopt;
    return point_then(len - pos, Expr::alt(std::move(alts)));
  }

  GrammarBuilder& b_;
  uint32_t k_, q_;
  size_t rules_ = 0;
  std::map<std::pair<size_t, uint32_t>, std::optional<uint32_t>> exact_;
  std::map<std::pair<size_t, uint32_t>, uint32_t> least_;
  std::vector<uint32_t> open_;
};

// One side of a fraction bound: the rest of its digits (none: zero), or inactive.
struct Side {
  bool active = false;
  std::string digits;
  bool excl = false;
  bool operator==(const Side&) const = default;
};
struct FracLang {
  bool eps = false;              // the empty rest (all further digits zero) is in
  std::optional<Expr> nonempty;  // the non-empty digit strings that are in
};

// Digit strings s with lo < or <= 0.s and 0.s < or <= hi (each side optional).
FracLang frac_lang(const Side& lo, const Side& hi) {
  const bool lo_free = !lo.active || (lo.digits.empty() && !lo.excl);
  const bool need_pos = lo.active && lo.digits.empty() && lo.excl;  // the rest must be > 0
  const Expr any = Expr::plus(digits(0, 9));
  if (hi.active && hi.digits.empty()) {  // the rest must be <= 0 (< 0: nothing)
    if (lo_free && !hi.excl) return {true, Expr::plus(lit("0"))};
    return {};
  }
  if (lo_free && !hi.active) return {true, any};
  if (need_pos && !hi.active) return {false, Expr::seq({Expr::star(lit("0")), digits(1, 9), Expr::star(digits(0, 9))})};
  FracLang out;
  out.eps = lo_free;  // hi here is inactive or has digits left: a zero rest is below it
  std::vector<std::pair<std::pair<Side, Side>, ByteSet>> groups;
  for (int c = 0; c <= 9; ++c) {
    Side l, h;
    if (need_pos) {
      if (c == 0) l = lo;
    } else if (!lo_free) {
      const int d = lo.digits[0] - '0';
      if (c < d) continue;
      if (c == d) l = {true, lo.digits.substr(1), lo.excl};
    }
    if (hi.active) {
      const int d = hi.digits[0] - '0';
      if (c > d) continue;
      if (c == d) h = {true, hi.digits.substr(1), hi.excl};
    }
    if (!groups.empty() && groups.back().first == std::make_pair(l, h)) {
      groups.back().second.set(uint8_t('0' + c));
    } else {
      groups.push_back({{l, h}, ByteSet::single(uint8_t('0' + c))});
    }
  }
  std::vector<Expr> alts;
  for (auto& [sides, set] : groups) {
    FracLang child = frac_lang(sides.first, sides.second);
    if (!child.eps && !child.nonempty) continue;
    Expr rest = !child.nonempty ? Expr::empty()
                : child.eps     ? Expr::optional(std::move(*child.nonempty))
                                : std::move(*child.nonempty);
    alts.push_back(Expr::seq({Expr::byte_set(set), std::move(rest)}));
  }
  if (!alts.empty()) out.nonempty = Expr::alt(std::move(alts));
  return out;
}

// The fraction as written: none (zero) or "." and digits.
std::optional<Expr> frac_text(const Side& lo, const Side& hi) {
  FracLang f = frac_lang(lo, hi);
  std::vector<Expr> alts;
  if (f.eps) alts.push_back(Expr::empty());
  if (f.nonempty) alts.push_back(Expr::seq({lit("."), std::move(*f.nonempty)}));
  if (alts.empty()) return std::nullopt;
  return Expr::alt(std::move(alts));
}

struct Bound {
  Decimal d;
  bool excl = false;
};

// Non-negative decimals (any fraction, no exponent) within [lo, hi].
std::optional<Expr> decimal_range(GrammarBuilder& b, const Bound& lo, const std::optional<Bound>& hi) {
  if (hi) {
    const int c = cmp(lo.d, hi->d);
    if (c > 0 || (c == 0 && (lo.excl || hi->excl))) return std::nullopt;
  }
  DigitLang ints(b, 1, 0);
  const Side lo_side{true, lo.d.fp, lo.excl};
  std::vector<Expr> alts;
  auto add = [&](Expr ip, std::optional<Expr> frac) {
    if (frac) alts.push_back(Expr::seq({std::move(ip), std::move(*frac)}));
  };
  if (hi && lo.d.ip == hi->d.ip) {
    add(lit(lo.d.ip), frac_text(lo_side, {true, hi->d.fp, hi->excl}));
  } else {
    add(lit(lo.d.ip), frac_text(lo_side, {}));
    const std::optional<std::string> mid_hi = hi ? std::optional<std::string>(dec(hi->d.ip)) : std::nullopt;
    if (auto mid = ints.range(inc(lo.d.ip), mid_hi))
      alts.push_back(Expr::seq({std::move(*mid), Expr::optional(Expr::seq({lit("."), Expr::plus(digits(0, 9))}))}));
    if (hi) add(lit(hi->d.ip), frac_text({}, {true, hi->d.fp, hi->excl}));
  }
  if (alts.empty()) return std::nullopt;
  return Expr::alt(std::move(alts));
}

Decimal abs_of(Decimal d) { return d.neg = false, d; }

std::optional<Expr> signed_alts(std::optional<Expr> pos, std::optional<Expr> neg) {
  std::vector<Expr> alts;
  if (pos) alts.push_back(std::move(*pos));
  if (neg) alts.push_back(Expr::seq({lit("-"), std::move(*neg)}));
  if (alts.empty()) return std::nullopt;
  return Expr::alt(std::move(alts));
}

std::optional<Decimal> parse_opt(const std::optional<std::string>& t, const char* key) {
  return t ? std::optional<Decimal>(parse_decimal(*t, key)) : std::nullopt;
}

// The tighter of an inclusive and an exclusive bound (lower: the larger).
std::optional<Bound> tighter(const std::optional<Decimal>& incl, const std::optional<Decimal>& excl, bool lower) {
  if (!incl && !excl) return std::nullopt;
  if (!excl) return Bound{*incl, false};
  if (!incl) return Bound{*excl, true};
  const int c = cmp(*excl, *incl);
  return (lower ? c >= 0 : c <= 0) ? Bound{*excl, true} : Bound{*incl, false};
}

}  // namespace num
}  // namespace

std::optional<Expr> number_expr(GrammarBuilder& b, const NumberConstraint& c) {
  using namespace num;
  const auto lower = tighter(parse_opt(c.minimum, "minimum"), parse_opt(c.exclusive_minimum, "exclusiveMinimum"), true);
  const auto upper =
      tighter(parse_opt(c.maximum, "maximum"), parse_opt(c.exclusive_maximum, "exclusiveMaximum"), false);
  if (!c.integer && !c.multiple_of) {
    std::optional<Expr> pos, neg;
    if (!upper || !upper->d.neg) pos = decimal_range(b, lower && !lower->d.neg ? *lower : Bound{}, upper);
    if (!lower || lower->d.neg) {  // magnitudes above 0 only: no "-0"
      const Bound mlo = upper && upper->d.neg ? Bound{abs_of(upper->d), upper->excl} : Bound{Decimal{}, true};
      const std::optional<Bound> mhi =
          lower ? std::optional<Bound>(Bound{abs_of(lower->d), lower->excl}) : std::nullopt;
      neg = decimal_range(b, mlo, mhi);
    }
    return signed_alts(std::move(pos), std::move(neg));
  }
  // Scaled integers: x = N / 10^q with N a multiple of k.
  uint32_t k = 1, q = 0;
  if (c.multiple_of) {
    const Decimal m = parse_decimal(*c.multiple_of, "multipleOf");
    if (m.neg || (m.ip == "0" && m.fp.empty())) fail<InvalidArgument>("multipleOf must be greater than 0");
    const std::string p = strip_leading_zeros(m.ip + m.fp);
    if (p.size() > 9 || std::stoull(p) > kMaxNumberStates)
      fail<NumberTooComplex>("multipleOf {} needs a digit automaton of over {} states", *c.multiple_of,
                             kMaxNumberStates);
    uint64_t pk = std::stoull(p);
    const auto scale = uint32_t(m.fp.size());
    if (c.integer) {  // an integer is a multiple of p/10^s iff it is one of p / gcd(p, 10^s)
      for (uint32_t i = 0; i < scale && pk % 2 == 0; ++i) pk /= 2;
      for (uint32_t i = 0; i < scale && pk % 5 == 0; ++i) pk /= 5;
    } else {
      q = scale;
    }
    k = uint32_t(pk);
  }
  const std::optional<Int> lo = lower ? std::optional<Int>(scaled_bound(lower->d, q, true, lower->excl)) : std::nullopt;
  const std::optional<Int> hi =
      upper ? std::optional<Int>(scaled_bound(upper->d, q, false, upper->excl)) : std::nullopt;
  if (lo && hi && cmp(*lo, *hi) > 0) return std::nullopt;
  DigitLang lang(b, k, q);
  std::optional<Expr> pos, neg;
  if (!hi || !hi->neg) pos = lang.range(lo && !lo->neg ? lo->mag : "0", hi ? std::optional(hi->mag) : std::nullopt);
  if (!lo || lo->neg)
    neg = lang.range(hi && hi->neg ? hi->mag : "1", lo ? std::optional(lo->mag) : std::nullopt);  // never "-0"
  return signed_alts(std::move(pos), std::move(neg));
}

}  // namespace pagoda::grammar
