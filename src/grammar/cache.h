// The request-level entry point: a constraint as a request states it, and a
// thread-safe, bounded cache of compiled grammars (and their mask tables)
// keyed by content.
//
// Contract:
//   - compile(spec) gives the CompiledGrammar for a spec, from the cache when
//     the same (kind, strict, any_whitespace, body) was compiled before;
//     InvalidArgument (from the front end) otherwise-bad specs, never cached.
//   - tables(spec, vocab) gives the MaskTables for that grammar and
//     vocabulary, shared by every request with the same spec, so the mask
//     entries are paid once. The call that creates them also precomputes
//     them (MaskTables::precompute, on precompute_threads threads, outside
//     the cache's lock; 0: lazily, by the first token to need each), so it
//     belongs on a request worker, never the engine thread. Make a
//     GrammarMatcher from it. InvalidArgument when a precomputed entry
//     could not be built (a grammar too costly or ambiguous to match), for
//     this request and every later one with the spec.
//   - At most `capacity` grammars are kept; the least recently used goes.
//     Matchers keep what they use alive (shared_ptr).
//   - Bodies: json_schema: the schema text; regex: the pattern; gbnf: the
//     grammar text; choice: a JSON array of strings; tagged: its JSON object
//     (frontends.h); json_object: ignored.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/frontends.h"
#include "grammar/mask.h"
#include "grammar/token_vocab.h"

namespace pagoda::grammar {

struct ConstraintSpec {
  enum class Kind : uint8_t { json_object, json_schema, regex, choice, gbnf, tagged };
  Kind kind = Kind::json_object;
  std::string body;
  bool strict = true;           // JSON Schema (and tagged's schemas): unsupported keywords are errors
  bool any_whitespace = false;  // JSON Schema (and tagged's schemas): whitespace between tokens
};

// Compiles without a cache.
std::shared_ptr<const CompiledGrammar> compile(const ConstraintSpec& spec, const GrammarLimits& limits = {});

class GrammarCache {
 public:
  static constexpr size_t kDefaultPrecomputeThreads = 2;
  explicit GrammarCache(size_t capacity = 256, GrammarLimits limits = {},
                        size_t precompute_threads = kDefaultPrecomputeThreads)
      : capacity_(capacity), limits_(limits), precompute_threads_(precompute_threads) {}

  std::shared_ptr<const CompiledGrammar> compile(const ConstraintSpec& spec);
  std::shared_ptr<const MaskTables> tables(const ConstraintSpec& spec, std::shared_ptr<const TokenVocab> vocab);

  size_t size() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Item {
    std::string key;
    std::shared_ptr<const CompiledGrammar> grammar;
    std::shared_ptr<const MaskTables> tables;  // for the last vocabulary asked
  };
  Item& lookup_locked(const std::string& key);  // moves it to the front

  size_t capacity_;
  GrammarLimits limits_;
  size_t precompute_threads_;
  mutable std::mutex mu_;
  std::list<Item> lru_;
  std::unordered_map<std::string, std::list<Item>::iterator> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace pagoda::grammar
