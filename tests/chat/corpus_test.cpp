// Pagoda's Jinja engine against @huggingface/jinja on real chat templates:
// every template of tests/chat/templates/corpus.json with every conversation
// of tests/chat/conversations.json, generation prompt on and off, rendered
// the way apply_chat_template does (messages, tools, add_generation_prompt,
// bos_token, eos_token and the chat_template_kwargs such as enable_thinking).
// Each pair must render byte for byte as the oracle renders it, or both must
// raise. The pairs in corpus.json's `divergences` (the oracle lacks a Python
// Jinja feature the template uses) must differ, so the list stays exact.
// A template marked always_raises must raise for every pair. One Node
// process renders all pairs.
#include <gtest/gtest.h>

#include <set>

#include "jinja/template.h"
#include "testing/npm_oracle.h"
#include "oracle.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

struct Pair {
  size_t template_index;
  std::string conversation;
  bool generation_prompt;
  Json context;
  testing::OracleResult want;
};

struct Corpus {
  Json manifest;
  std::vector<std::string> texts;
  std::vector<Pair> pairs;
  std::set<std::pair<std::string, std::string>> divergent;  // (file, conversation)
};

Json read_json(const std::string& path) { return Json::parse(testing::read_file(path)); }

const Json& manifest() {
  static const Json m = read_json(testing::chat_tests_dir() + "/templates/corpus.json");
  return m;
}

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus c;
    c.manifest = manifest();
    const Json conversations = read_json(testing::chat_tests_dir() + "/conversations.json");
    for (const Json& d : c.manifest["divergences"])
      for (const Json& conv : d["conversations"]) c.divergent.emplace(d["file"], conv);
    std::vector<testing::ContextCase> cases;
    for (size_t i = 0; i < c.manifest["templates"].size(); ++i) {
      const Json& t = c.manifest["templates"][i];
      c.texts.push_back(testing::read_file(testing::chat_tests_dir() + "/templates/" + t["file"].get<std::string>()));
      for (const Json& conv : conversations) {
        for (bool gen : {true, false}) {
          Json ctx = {{"messages", conv["messages"]},
                      {"add_generation_prompt", gen},
                      {"bos_token", t["bos_token"]},
                      {"eos_token", t["eos_token"]}};
          if (conv.contains("tools")) ctx["tools"] = conv["tools"];
          if (conv.contains("kwargs"))
            for (const auto& [k, v] : conv["kwargs"].items()) ctx[k] = v;
          cases.push_back({c.texts.back(), ctx});
          c.pairs.push_back({i, conv["name"], gen, ctx, {}});
        }
      }
    }
    const auto results = testing::run_oracle(cases);
    for (size_t i = 0; i < c.pairs.size(); ++i) c.pairs[i].want = results[i];
    return c;
  }();
  return c;
}

// Checks every pair of one template; returns how many the oracle rendered.
int check_template(const Corpus& c, size_t index) {
  const std::string file = c.manifest["templates"][index]["file"];
  SCOPED_TRACE(file);
  std::optional<jinja::Template> tmpl;
  std::string parse_error;
  try {
    tmpl.emplace(c.texts[index]);
  } catch (const Error& e) {
    parse_error = e.what();
  }
  int rendered = 0;
  for (const Pair& p : c.pairs) {
    if (p.template_index != index) continue;
    SCOPED_TRACE(p.conversation + (p.generation_prompt ? ", generation prompt" : ", no generation prompt"));
    std::optional<std::string> got;
    std::string error = parse_error;
    if (tmpl) {
      try {
        got = tmpl->render(p.context);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    const bool same = got == p.want.text;
    if (c.divergent.count({file, p.conversation})) {
      EXPECT_FALSE(same) << "listed as a divergence in corpus.json but renders as the oracle does now";
      continue;
    }
    rendered += p.want.text.has_value();
    if (p.want.text && !got)
      ADD_FAILURE() << "raised \"" << error << "\"; the oracle renders:\n" << *p.want.text;
    else if (!p.want.text && got)
      ADD_FAILURE() << "rendered:\n" << *got << "\nthe oracle raises \"" << p.want.error << "\"";
    else
      EXPECT_EQ(got, p.want.text);
  }
  return rendered;
}

// One test over all templates: the oracle's one Node process serves them all.
TEST(Corpus, EveryTemplateRendersAsTheOracle) {
  PAGODA_REQUIRE_NPM("tests/chat/oracle", "@huggingface/jinja");
  const Corpus* c = nullptr;
  try {
    c = &corpus();
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  for (size_t i = 0; i < c->manifest["templates"].size(); ++i) {
    const Json& t = c->manifest["templates"][i];
    // A template the conversations cannot satisfy is marked so (always_raises,
    // with the reason); every other one must render some pairs, so a broken
    // oracle that only raises cannot pass.
    const int rendered = check_template(*c, i);
    if (t.contains("always_raises"))
      EXPECT_EQ(rendered, 0) << t["file"] << " renders now: drop its always_raises mark";
    else
      EXPECT_GT(rendered, 0) << "the oracle rendered nothing for " << t["file"];
  }
}

TEST(Corpus, HasAtLeastThirtyModels) { EXPECT_GE(manifest()["templates"].size(), 30u); }

}  // namespace
}  // namespace pagoda
