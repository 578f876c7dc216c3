// Picking the template family: detection from real template texts, names for
// --chat-template, and the choice for a GGUF file (override, detected, plain
// fallback, unsupported).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "oracle.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

const std::vector<ChatTemplate> kAll = {ChatTemplate::chatml, ChatTemplate::llama2, ChatTemplate::mistral,
                                        ChatTemplate::llama3, ChatTemplate::zephyr, ChatTemplate::gemma,
                                        ChatTemplate::phi3,   ChatTemplate::plain};

GgufFile phi3_vocab() { return GgufFile::open(testing::shared_path("testdata/tokenizer/ggml-vocab-phi-3.gguf")); }
GgufFile stories() { return GgufFile::open(testing::shared_path("models/stories260K.gguf")); }

// A file with only the metadata the chat module reads; `bytes` must outlive it.
GgufFile with_template(std::vector<uint8_t>& bytes, const std::optional<std::string>& chat_template) {
  GgufWriter w;
  w.set("tokenizer.ggml.tokens", Value::strings({"<unk>", "<s>", "</s>", "hi"}));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(2));
  if (chat_template) w.set("tokenizer.chat_template", Value::string(*chat_template));
  bytes = w.to_bytes();
  return GgufFile::parse(bytes.data(), bytes.size(), "test.gguf");
}

TEST(DetectChatTemplate, RealTemplates) {
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("chatml")), ChatTemplate::chatml);
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("llama2")), ChatTemplate::llama2);
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("mistral")), ChatTemplate::mistral);
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("llama3")), ChatTemplate::llama3);
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("zephyr")), ChatTemplate::zephyr);
  EXPECT_EQ(detect_chat_template(testing::read_template_fixture("gemma")), ChatTemplate::gemma);
  EXPECT_EQ(detect_chat_template(phi3_vocab().get_string("tokenizer.chat_template")), ChatTemplate::phi3);
}

TEST(DetectChatTemplate, UnknownTemplates) {
  EXPECT_EQ(detect_chat_template(""), std::nullopt);
  EXPECT_EQ(detect_chat_template("{% for message in messages %}{{ message.content }}{{ eos_token }}{% endfor %}"),
            std::nullopt);
  // openchat-3.5: its own markers, none of ours.
  EXPECT_EQ(detect_chat_template("{{ bos_token }}{% for message in messages %}{{ 'GPT4 Correct ' + "
                                 "message['role'].title() + ': ' + message['content'] + '<|end_of_turn|>'}}"
                                 "{% endfor %}{% if add_generation_prompt %}{{ 'GPT4 Correct Assistant:' }}"
                                 "{% endif %}"),
            std::nullopt);
}

TEST(ChatTemplateNames, RoundTripAndErrors) {
  for (ChatTemplate t : kAll) EXPECT_EQ(chat_template_from_name(chat_template_name(t)), t);
  EXPECT_EQ(chat_template_names(), "chatml, llama2, mistral, llama3, zephyr, gemma, phi3, plain");
  try {
    chat_template_from_name("vicuna");
    FAIL() << "accepted an unknown name";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'vicuna'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chatml, llama2, mistral, llama3, zephyr, gemma, phi3, plain"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(chat_template_from_name("ChatML"), InvalidArgument);  // names are exact
  EXPECT_THROW(chat_template_from_name(""), InvalidArgument);
}

TEST(ChatTemplateFor, RealFiles) {
  EXPECT_EQ(chat_template_for(phi3_vocab()), ChatTemplate::phi3);
  EXPECT_EQ(chat_template_for(phi3_vocab(), "chatml"), ChatTemplate::chatml);  // the override wins
  EXPECT_THROW(chat_template_for(phi3_vocab(), "nope"), InvalidArgument);
  EXPECT_EQ(chat_template_for(stories()), ChatTemplate::plain);  // no tokenizer.chat_template
  EXPECT_EQ(chat_template_for(stories(), "llama2"), ChatTemplate::llama2);
}

TEST(ChatTemplateFor, FromTemplateText) {
  std::vector<uint8_t> bytes;
  EXPECT_EQ(chat_template_for(with_template(bytes, testing::read_template_fixture("zephyr"))), ChatTemplate::zephyr);
  EXPECT_EQ(chat_template_for(with_template(bytes, std::nullopt)), ChatTemplate::plain);
  EXPECT_EQ(chat_template_for(with_template(bytes, "")), ChatTemplate::plain);
}

TEST(ChatTemplateFor, UnrecognisedTemplateIsUnsupported) {
  std::vector<uint8_t> bytes;
  const GgufFile f = with_template(bytes,
                                   "{% for m in messages %}\n{{ '### ' + m['role'] + ':\\n' + m['content'] }}"
                                   "{% endfor %}");
  EXPECT_EQ(chat_template_for(f, "chatml"), ChatTemplate::chatml);  // the override still works
  try {
    chat_template_for(f);
    FAIL() << "accepted an unrecognised template";
  } catch (const Unsupported& e) {
    const std::string msg = e.what();
    // Its first 60 characters, the newline and backslash escaped, then the way out.
    EXPECT_NE(msg.find("test.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"{% for m in messages %}\\n{{ '### ' + m['role'] + ':\\\\n' + m['c...\""), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("--chat-template NAME"), std::string::npos) << msg;
    EXPECT_NE(msg.find("chatml, llama2"), std::string::npos) << msg;
  }
}

TEST(ChatTemplateFor, ExcerptCutsWholeCharacters) {
  std::string text;
  for (int i = 0; i < 70; ++i) text += "\u00e9";  // two bytes each
  std::vector<uint8_t> bytes;
  try {
    chat_template_for(with_template(bytes, text));
    FAIL() << "accepted an unrecognised template";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("\"" + text.substr(0, 120) + "...\""), std::string::npos) << e.what();
  }
}

TEST(ChatRenderOptions, BosAndEosFromTheVocabulary) {
  const RenderOptions phi3 = chat_render_options(phi3_vocab());
  EXPECT_EQ(phi3.bos_text, "<s>");
  EXPECT_EQ(phi3.eos_text, "<|endoftext|>");
  EXPECT_TRUE(phi3.add_generation_prompt);
  const RenderOptions s = chat_render_options(stories());
  EXPECT_EQ(s.bos_text, "<s>");
  EXPECT_EQ(s.eos_text, "</s>");

  GgufWriter w;  // no vocabulary at all
  const std::vector<uint8_t> bytes = w.to_bytes();
  const RenderOptions none = chat_render_options(GgufFile::parse(bytes.data(), bytes.size()));
  EXPECT_EQ(none.bos_text, "");
  EXPECT_EQ(none.eos_text, "");
}

// The markers the phi3 renderer writes are whole tokens of the Phi-3
// vocabulary, so tokenizing with parse_special turns them into those tokens.
TEST(ChatRenderOptions, Phi3MarkersAreVocabularyTokens) {
  const GgufFile f = phi3_vocab();
  const auto& tokens = f.get("tokenizer.ggml.tokens").as_array("tokens");
  auto has = [&](const std::string& text) {
    for (const auto& t : tokens)
      if (t.as_string("token") == text) return true;
    return false;
  };
  for (const char* marker : {"<s>", "<|user|>", "<|end|>", "<|assistant|>"}) EXPECT_TRUE(has(marker)) << marker;
}

}  // namespace
}  // namespace pagoda
