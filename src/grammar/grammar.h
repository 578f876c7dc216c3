// The grammar representation every front end (GBNF, regex, JSON Schema, the
// built-in JSON grammar, choice) compiles to, and the matcher runs.
//
// Contract:
//   - A Grammar is a set of rules over BYTES. A rule is a list of
//     alternatives; an alternative is a sequence of elements; an element is
//     a byte set (one byte from a 256-bit set) or a reference to a rule.
//     Character classes over code points are lowered to UTF-8 byte sequences
//     (utf8_class.h), so the matcher never decodes UTF-8 and the bytes it
//     admits are always well-formed UTF-8 where the front end asked for
//     characters.
//   - Front ends build Expr trees (sequence, alternative, byte set, rule
//     reference, bounded or unbounded repetition) with GrammarBuilder, which
//     lowers them: a nested alternative becomes a rule, x{m,n} becomes m
//     copies of x then n-m nested optional rules, x* becomes S ::= x S | "".
//   - GrammarBuilder::finish() checks and normalizes: undefined rules are
//     InvalidArgument; alternatives that can never finish (an empty byte
//     set, a rule that only recurses) are dropped, and if the root loses all
//     of them the language is empty: InvalidArgument. After that every state
//     the matcher reaches can still end. Left recursion (also through rules
//     that can match "", as in (a?)*) is InvalidArgument naming the rule.
//   - Limits (GrammarLimits) bound the input size, nesting depth, repetition
//     bounds, rules and elements; exceeding one is InvalidArgument naming it.
//   - A finished Grammar is immutable and flat: positions are indices into
//     `elems`, each alternative ends with an End element.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagoda::grammar {

struct GrammarLimits {
  size_t max_input_bytes = 512 * 1024;  // grammar / schema / regex text
  uint32_t max_depth = 64;              // nesting of groups, schemas, regex groups
  uint32_t max_repeat = 10000;          // m and n in x{m,n}, minItems/maxLength...
  size_t max_rules = 100000;
  size_t max_elements = 2000000;  // after lowering repetitions
};

struct ByteSet {
  std::array<uint64_t, 4> w{};
  bool test(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { w[b >> 6] |= uint64_t(1) << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) set(uint8_t(b));
  }
  bool empty() const { return (w[0] | w[1] | w[2] | w[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  static ByteSet single(uint8_t b) {
    ByteSet s;
    s.set(b);
    return s;
  }
  static ByteSet range(uint8_t lo, uint8_t hi) {
    ByteSet s;
    s.set_range(lo, hi);
    return s;
  }
};

// An expression tree: what front ends produce before lowering.
struct Expr {
  enum class Kind : uint8_t { Bytes, Seq, Alt, Ref, Repeat };
  Kind kind = Kind::Seq;      // an empty Seq is ""
  ByteSet bytes;              // Bytes
  uint32_t rule = 0;          // Ref
  uint32_t min = 0, max = 0;  // Repeat; max == kUnbounded for * and +
  std::vector<Expr> kids;     // Seq, Alt: the parts; Repeat: one kid
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  static Expr empty() { return Expr{}; }
  static Expr byte_set(const ByteSet& s) {
    Expr e;
    e.kind = Kind::Bytes;
    e.bytes = s;
    return e;
  }
  static Expr literal(std::string_view bytes);
  static Expr ref(uint32_t rule) {
    Expr e;
    e.kind = Kind::Ref;
    e.rule = rule;
    return e;
  }
  static Expr seq(std::vector<Expr> kids);
  static Expr alt(std::vector<Expr> kids);
  static Expr repeat(Expr x, uint32_t min, uint32_t max);
  static Expr optional(Expr x) { return repeat(std::move(x), 0, 1); }
  static Expr star(Expr x) { return repeat(std::move(x), 0, kUnbounded); }
  static Expr plus(Expr x) { return repeat(std::move(x), 1, kUnbounded); }
};

struct Element {
  enum class Kind : uint8_t { Bytes, Ref, End };
  Kind kind;
  uint32_t id;  // Bytes: index into Grammar::sets; Ref: rule index
};

// The finished, flat grammar.
struct Grammar {
  std::vector<ByteSet> sets;
  std::vector<Element> elems;       // alternatives back to back, each ending with End
  std::vector<uint32_t> alt_begin;  // first element of each alternative
  std::vector<uint32_t> rule_alts;  // rule r's alternatives: [rule_alts[r], rule_alts[r+1])
  std::vector<std::string> rule_names;
  uint32_t root = 0;

  size_t num_rules() const { return rule_names.size(); }
  std::string describe() const;  // GBNF-like text, for tests and debugging
};

// Builds a grammar rule by rule. Rules may be referenced before they are
// defined; finish() fails on any left undefined.
class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {}) : limits_(limits) {}

  // The index of the rule called `name`, created (undefined) on first use.
  uint32_t rule(std::string_view name);
  // A new rule with a unique name made from `hint`.
  uint32_t fresh_rule(std::string_view hint);
  // Defines a rule; InvalidArgument if it was defined already.
  void define(uint32_t rule, Expr body);
  bool defined(uint32_t rule) const { return defined_[rule]; }
  const std::string& name(uint32_t rule) const { return names_[rule]; }
  const GrammarLimits& limits() const { return limits_; }

  Grammar finish(uint32_t root);

 private:
  using Alt = std::vector<Element>;
  std::vector<Element> lower_seq(const Expr& e, uint32_t owner);
  void lower_into(const Expr& e, uint32_t owner, std::vector<Element>& out);
  uint32_t lower_to_rule(const Expr& e, uint32_t owner);
  uint32_t lower_repeat(const Expr& e, uint32_t owner);
  uint32_t intern(const ByteSet& s);
  void count_elements(size_t n);

  GrammarLimits limits_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<std::vector<Alt>> rules_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<ByteSet> sets_;
  size_t elements_ = 0;
};

// What the matcher runs: a finished grammar and what compiling it left out.
// Immutable; shared across requests (shared_ptr<const CompiledGrammar>).
struct CompiledGrammar {
  Grammar grammar;
  std::vector<std::string> ignored_keywords;  // non-strict JSON Schema only
};

}  // namespace pagoda::grammar
