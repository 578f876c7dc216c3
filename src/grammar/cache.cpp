// Compiling outside the lock: a slow schema never blocks other requests'
// lookups; two threads compiling the same spec both succeed, one is kept.
#include "grammar/cache.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace pagoda::grammar {

std::shared_ptr<const CompiledGrammar> compile(const ConstraintSpec& spec, const GrammarLimits& limits) {
  auto out = std::make_shared<CompiledGrammar>();
  switch (spec.kind) {
    case ConstraintSpec::Kind::json_object: out->grammar = builtin_json_object_grammar(limits); break;
    case ConstraintSpec::Kind::regex: out->grammar = compile_regex(spec.body, limits); break;
    case ConstraintSpec::Kind::gbnf: out->grammar = compile_gbnf(spec.body, limits); break;
    case ConstraintSpec::Kind::json_schema:
    case ConstraintSpec::Kind::tagged: {
      JsonSchemaOptions o;
      o.strict = spec.strict;
      o.any_whitespace = spec.any_whitespace;
      o.limits = limits;
      auto r =
          spec.kind == ConstraintSpec::Kind::tagged ? compile_tagged(spec.body, o) : compile_json_schema(spec.body, o);
      out->grammar = std::move(r.grammar);
      out->ignored_keywords = std::move(r.ignored);
      break;
    }
    case ConstraintSpec::Kind::choice: {
      if (spec.body.size() > limits.max_input_bytes)
        fail<InvalidArgument>("choice: {} bytes exceed the limit of {}", spec.body.size(), limits.max_input_bytes);
      std::vector<std::string> choices;
      try {
        choices = nlohmann::json::parse(spec.body).get<std::vector<std::string>>();
      } catch (const nlohmann::json::exception&) {
        fail<InvalidArgument>("choice: the body must be a JSON array of strings");
      }
      out->grammar = compile_choice(choices, limits);
      break;
    }
  }
  return out;
}

namespace {
std::string key_of(const ConstraintSpec& s) {
  std::string k;
  k += char('0' + int(s.kind));
  k += s.strict ? 's' : 'l';
  k += s.any_whitespace ? 'w' : 'c';
  return k + s.body;
}
}  // namespace

GrammarCache::Item& GrammarCache::lookup_locked(const std::string& key) {
  auto it = index_.find(key);
  lru_.splice(lru_.begin(), lru_, it->second);
  return *it->second;
}

std::shared_ptr<const CompiledGrammar> GrammarCache::compile(const ConstraintSpec& spec) {
  const std::string key = key_of(spec);
  {
    std::lock_guard lock(mu_);
    if (index_.count(key)) {
      ++hits_;
      return lookup_locked(key).grammar;
    }
    ++misses_;
  }
  auto g = grammar::compile(spec, limits_);
  std::lock_guard lock(mu_);
  if (index_.count(key)) return lookup_locked(key).grammar;
  lru_.push_front({key, g, nullptr});
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return g;
}

std::shared_ptr<const MaskTables> GrammarCache::tables(const ConstraintSpec& spec,
                                                       std::shared_ptr<const TokenVocab> vocab) {
  auto g = compile(spec);
  const std::string key = key_of(spec);
  std::shared_ptr<const MaskTables> t;
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end() && it->second->tables && &it->second->tables->vocab() == vocab.get()) {
      t = it->second->tables;
    } else {
      t = std::make_shared<const MaskTables>(g, std::move(vocab));
      fresh = true;
      if (it != index_.end() && it->second->grammar == g) it->second->tables = t;
    }
  }
  // Unlocked: requests for the same spec meanwhile share t and build lazily what is not there yet.
  if (fresh && precompute_threads_ > 0) t->precompute(precompute_threads_);
  // A state no mask can be built for fails every request that reaches it: refuse it now.
  if (const std::string err = t->build_error(); !err.empty()) fail<InvalidArgument>("{}", err);
  return t;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}
uint64_t GrammarCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}
uint64_t GrammarCache::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace pagoda::grammar
