// Each template family against the real template text of a model of that
// family, rendered by an independent Jinja implementation (@huggingface/jinja
// via tests/chat/oracle): the prompt must match byte for byte, and where the
// real template raises, render_chat must throw InvalidArgument with the same
// message; the Jinja engine rendering the same template text agrees as well.
// One Node process renders every case of the binary.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/template_source.h"
#include "gguf/file.h"
#include "testing/npm_oracle.h"
#include "oracle.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Chat = std::vector<ChatMessage>;

}  // namespace

// Readable test names and messages for parameters.
void PrintTo(ChatTemplate t, std::ostream* os) { *os << chat_template_name(t); }

namespace {

// The real template text and the vocabulary's BOS/EOS texts of one model per family.
struct Family {
  std::string template_text;
  RenderOptions opts;
};

Family family(ChatTemplate t) {
  auto fixture = [](const char* name, const char* bos, const char* eos) {
    return Family{testing::read_template_fixture(name), RenderOptions{bos, eos, true}};
  };
  switch (t) {
    case ChatTemplate::chatml: return fixture("chatml", "<s>", "<|im_end|>");
    case ChatTemplate::llama2: return fixture("llama2", "<s>", "</s>");
    case ChatTemplate::mistral: return fixture("mistral", "<s>", "</s>");
    case ChatTemplate::llama3: return fixture("llama3", "<|begin_of_text|>", "<|eot_id|>");
    case ChatTemplate::zephyr: return fixture("zephyr", "<s>", "</s>");
    case ChatTemplate::gemma: return fixture("gemma", "<bos>", "<eos>");
    case ChatTemplate::phi3: {
      // Phi-3's template and BOS/EOS come straight from a real GGUF vocabulary.
      const GgufFile f = GgufFile::open(testing::shared_path("testdata/tokenizer/ggml-vocab-phi-3.gguf"));
      return Family{f.get_string("tokenizer.chat_template"), chat_render_options(f)};
    }
    case ChatTemplate::plain: break;
  }
  throw std::logic_error("no real template for this family");
}

const std::vector<ChatTemplate> kFamilies = {ChatTemplate::chatml, ChatTemplate::llama2, ChatTemplate::mistral,
                                             ChatTemplate::llama3, ChatTemplate::zephyr, ChatTemplate::gemma,
                                             ChatTemplate::phi3};

const std::vector<Chat> kChats = {
    {{"user", "Hello!"}},
    {{"system", "You are a helpful assistant."}, {"user", "What is 2 + 2?"}},
    {{"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke."}},
    {{"system", "Answer briefly."}, {"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Another?"}},
    // Newlines, tabs, non-ASCII text, and whitespace (ASCII, U+00A0, U+3000)
    // at the ends for the templates that strip it.
    {{"user", "  Line one\nLine two\n\n  "},
     {"assistant", "\u00a0H\u00e9llo w\u00f6rld \U0001F999 \u2014 ok\u3000"},
     {"user", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\tand tabs\r\n"}},
    // Content is data, never template code or markers to interpret.
    {{"user", "Is <|im_end|> or [INST] a token? {{ not jinja }} {% raw %} \\n"}},
    {{"user", ""}, {"assistant", ""}, {"user", " "}},
    {{"user", "Hi"}, {"assistant", "Hey"}},
    // Orders the strict templates reject, or treat in their own ways.
    {{"user", "a"}, {"user", "b"}},
    {{"assistant", "x"}, {"user", "y"}},
    {{"user", "a"}, {"system", "b"}, {"user", "c"}},
    {{"system", "Be nice."}},
    {{"system", "s"}, {"assistant", "a"}},
    {{"system", "s1"}, {"system", "s2"}, {"user", "u"}},
};

struct Expectation {
  ChatTemplate family;
  std::string template_text;
  Chat chat;
  RenderOptions opts;
  testing::OracleResult want;
};

// Every (family, chat, add_generation_prompt) case, with the oracle's answer.
const std::vector<Expectation>& expectations() {
  static const std::vector<Expectation> all = [] {
    std::vector<Expectation> out;
    std::vector<testing::OracleCase> cases;
    for (ChatTemplate t : kFamilies) {
      const Family fam = family(t);
      for (const Chat& chat : kChats) {
        for (bool gen : {true, false}) {
          RenderOptions opts = fam.opts;
          opts.add_generation_prompt = gen;
          cases.push_back({fam.template_text, chat, opts});
          out.push_back({t, fam.template_text, chat, opts, {}});
        }
      }
    }
    const auto results = testing::run_oracle(cases);
    for (size_t i = 0; i < out.size(); ++i) out[i].want = results[i];
    return out;
  }();
  return all;
}

std::string describe(const Chat& chat, bool gen) {
  std::string s = gen ? "add_generation_prompt, chat:" : "no generation prompt, chat:";
  for (const auto& m : chat) s += " [" + m.role + ": \"" + m.content + "\"]";
  return s;
}

std::string render_with_jinja(const Expectation& e) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& m : e.chat) messages.push_back({{"role", m.role}, {"content", m.content}});
  JinjaChatInput in{messages, nullptr, e.opts.add_generation_prompt, nullptr};
  return render_jinja_chat(jinja::Template(e.template_text), in, e.opts);
}

class OracleTest : public ::testing::TestWithParam<ChatTemplate> {};

TEST_P(OracleTest, MatchesRealTemplate) {
  PAGODA_REQUIRE_NPM("tests/chat/oracle", "@huggingface/jinja");
  const std::vector<Expectation>* all = nullptr;
  try {
    all = &expectations();
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  int rendered = 0, raised = 0;
  for (const Expectation& e : *all) {
    if (e.family != GetParam()) continue;
    SCOPED_TRACE(describe(e.chat, e.opts.add_generation_prompt));
    std::optional<std::string> jinja_text;
    try {
      jinja_text = render_with_jinja(e);
    } catch (const InvalidArgument&) {
    }
    // The Jinja path (the template text itself) agrees with the oracle too.
    EXPECT_EQ(jinja_text, e.want.text);
    if (e.want.text) {
      ++rendered;
      try {
        EXPECT_EQ(render_chat(e.family, e.chat, e.opts), *e.want.text);
      } catch (const std::exception& ex) {
        ADD_FAILURE() << "threw \"" << ex.what() << "\"; the real template renders \"" << *e.want.text << "\"";
      }
    } else {
      ++raised;
      try {
        const std::string got = render_chat(e.family, e.chat, e.opts);
        ADD_FAILURE() << "rendered \"" << got << "\"; the real template raises \"" << e.want.error << "\"";
      } catch (const InvalidArgument& ex) {
        EXPECT_EQ(std::string(ex.what()), e.want.error);
      }
    }
  }
  // Guard against a broken oracle that makes every case an error (or none).
  EXPECT_GE(rendered, 12);
  const bool strict =
      GetParam() == ChatTemplate::llama2 || GetParam() == ChatTemplate::mistral || GetParam() == ChatTemplate::gemma;
  if (strict)
    EXPECT_GT(raised, 0);
  else
    EXPECT_EQ(raised, 0);
}

INSTANTIATE_TEST_SUITE_P(Families, OracleTest, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return std::string(chat_template_name(info.param)); });

}  // namespace
}  // namespace pagoda
