// JSON Schema's numeric keywords as exact grammars over the digits of a JSON
// number (used by json_schema.cpp).
//
//   integer      minimum / maximum / exclusiveMinimum / exclusiveMaximum
//                (either side open) and multipleOf: exactly the decimal
//                integers (no leading zeros, no "-0") in the range that are
//                multiples. Bounds need not be integers (ceil / floor).
//   number       the same bounds, exact: the integer part is bounded and the
//                fraction constrained where the integer part meets a bound
//                ([1,5]: 1..4 with any fraction, or 5, 5.0, 5.00...).
//                Exponents (1e3) are not written when bounds or multipleOf
//                are present. multipleOf m = p/10^q: exactly q fraction
//                digits (multipleOf 0.01: 3.10, 0.05) and N = x*10^q a
//                multiple of p (a divisibility automaton over the digits).
//
// Limits: each bound and multipleOf at most kMaxDigits significant digits and
// |exponent| <= 100 (else InvalidArgument "out of range"); the divisibility
// automaton at most kMaxStates states (else TooComplex, which the caller
// reports as an unsupported multipleOf).
#pragma once

#include <optional>
#include <string>

#include "grammar/grammar.h"
#include "util/error.h"

namespace pagoda::grammar {

struct NumberConstraint {
  bool integer = false;
  // The keywords' values as JSON number text (e.g. nlohmann's dump of them).
  std::optional<std::string> minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of;
  bool bounded() const { return minimum || maximum || exclusive_minimum || exclusive_maximum || multiple_of; }
};

// multipleOf's automaton would be too large: the keyword cannot be compiled.
struct NumberTooComplex : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

inline constexpr size_t kMaxNumberDigits = 40;
inline constexpr size_t kMaxNumberStates = 4096;

// The numbers satisfying `c`, as an expression in `b`; nullopt when none does.
// A malformed value is InvalidArgument naming the keyword.
std::optional<Expr> number_expr(GrammarBuilder& b, const NumberConstraint& c);

}  // namespace pagoda::grammar
