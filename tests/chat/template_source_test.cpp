// Template selection (GGUF template, its named variants, --chat-template FILE
// or NAME, the plain fallback) and rendering with apply_chat_template's
// variables, on small metadata-only GGUF files written here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/template_source.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "pagoda_template_source_" + name; }

// A GGUF holding only tokenizer metadata: tokens <s> and </s>, and the given templates.
GgufFile model_with(const std::vector<std::pair<std::string, std::string>>& templates, const std::string& name) {
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  w.set("tokenizer.ggml.tokens", Value::strings({"<unk>", "<s>", "</s>"}));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(2));
  for (const auto& [key, text] : templates) w.set(key, Value::string(text));
  const std::string path = temp_path(name + ".gguf");
  w.write(path);
  return GgufFile::open(path);
}

const char* kSimple =
    "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% "
    "endif %}";

std::string render(const SelectedChatTemplate& s, const GgufFile& f, const Json& messages, Json tools = nullptr,
                   Json kwargs = nullptr) {
  JinjaChatInput in{messages, std::move(tools), true, std::move(kwargs)};
  return render_jinja_chat(*s.jinja, in, chat_render_options(f));
}

const Json kHi = Json::parse(R"([{"role": "user", "content": "Hi"}])");

TEST(TemplateSource, GgufTemplateIsJinja) {
  const GgufFile f = model_with({{"tokenizer.chat_template", kSimple}}, "simple");
  const SelectedChatTemplate s = select_chat_template(f);
  ASSERT_TRUE(s.jinja);
  EXPECT_FALSE(s.builtin);
  EXPECT_TRUE(s.error.empty());
  EXPECT_EQ(render(s, f, kHi), "[user] Hi\n[assistant]");
}

TEST(TemplateSource, UnknownFamiliesNoLongerRefuse) {
  // An Alpaca-style template: no built-in family matches it, the Jinja engine renders it.
  const GgufFile f = model_with({{"tokenizer.chat_template",
                                  "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}### Instruction:\n"
                                  "{{ m['content'] }}\n\n{% else %}### Response:\n{{ m['content'] }}{{ eos_token }}\n\n"
                                  "{% endif %}{% endfor %}{% if add_generation_prompt %}### Response:\n{% endif %}"}},
                                "alpaca");
  const SelectedChatTemplate s = select_chat_template(f);
  EXPECT_EQ(render(s, f, kHi), "<s>### Instruction:\nHi\n\n### Response:\n");
}

TEST(TemplateSource, UnparseableTemplateKeepsTheReason) {
  const GgufFile f = model_with({{"tokenizer.chat_template", "{% if messages %}never closed"}}, "broken");
  const SelectedChatTemplate s = select_chat_template(f);
  EXPECT_FALSE(s.jinja);
  EXPECT_NE(s.error.find("tokenizer.chat_template"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("endif"), std::string::npos) << s.error;
}

TEST(TemplateSource, NamedVariantsAreLoaded) {
  const GgufFile f = model_with(
      {{"tokenizer.chat_template", kSimple}, {"tokenizer.chat_template.tool_use", "tools: {{ tools|length }}"}},
      "vars");
  const SelectedChatTemplate s = select_chat_template(f);
  ASSERT_EQ(s.variants.count("tool_use"), 1u);
  EXPECT_NE(s.source.find("tool_use"), std::string::npos) << s.source;
  JinjaChatInput in{kHi, Json::parse(R"([{"type": "function"}])"), true, nullptr};
  EXPECT_EQ(render_jinja_chat(*s.variants.at("tool_use"), in, chat_render_options(f)), "tools: 1");
}

TEST(TemplateSource, NoTemplateFallsBackToPlain) {
  const GgufFile f = model_with({}, "none");
  const SelectedChatTemplate s = select_chat_template(f);
  EXPECT_TRUE(s.is_plain());
  EXPECT_FALSE(s.jinja);
}

TEST(TemplateSource, SpecIsABuiltinNameOrAFile) {
  const GgufFile f = model_with({{"tokenizer.chat_template", kSimple}}, "spec");
  EXPECT_EQ(select_chat_template(f, "chatml").builtin, ChatTemplate::chatml);
  const std::string file = temp_path("spec.jinja");
  std::ofstream(file) << "<{{ messages[0].content }}>";
  const SelectedChatTemplate s = select_chat_template(f, file);
  ASSERT_TRUE(s.jinja);
  EXPECT_EQ(render(s, f, kHi), "<Hi>");
  EXPECT_NE(s.source.find(file), std::string::npos);
  try {
    select_chat_template(f, "no-such-thing");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos) << e.what();
  }
}

TEST(TemplateSource, ContextIsApplyChatTemplates) {
  const GgufFile f = model_with({{"tokenizer.chat_template",
                                  "{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ enable_thinking }}|"
                                  "{{ messages[0].content[0].text }}|{{ add_generation_prompt }}"}},
                                "ctx");
  const SelectedChatTemplate s = select_chat_template(f);
  const Json parts = Json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "part"}]}])");
  EXPECT_EQ(render(s, f, parts, nullptr, Json::parse(R"({"enable_thinking": false})")),
            "<s>|</s>|true|false|part|true");
  EXPECT_THROW(render(s, f, parts, nullptr, Json::parse(R"({"messages": []})")), InvalidArgument);
}

TEST(TemplateSource, RaisedErrorsAreInvalidArgument) {
  const GgufFile f =
      model_with({{"tokenizer.chat_template",
                   "{% if messages[0].role == 'system' %}{{ raise_exception('no system') }}{% endif %}"}},
                 "raise");
  const SelectedChatTemplate s = select_chat_template(f);
  try {
    render(s, f, Json::parse(R"([{"role": "system", "content": "x"}])"));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "no system");
  }
}

}  // namespace
}  // namespace pagoda
