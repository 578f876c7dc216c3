// render_chat beyond what the oracle compares: the plain fallback, input
// validation, and the exact whitespace rules where JavaScript's Jinja and
// Python's (which the models' templates are written for) disagree.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/strip.h"
#include "gguf/file.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Chat = std::vector<ChatMessage>;
using Json = nlohmann::ordered_json;

const std::vector<ChatTemplate> kAll = {ChatTemplate::chatml, ChatTemplate::llama2, ChatTemplate::mistral,
                                        ChatTemplate::llama3, ChatTemplate::zephyr, ChatTemplate::gemma,
                                        ChatTemplate::phi3,   ChatTemplate::plain};

const RenderOptions kSpm{"<s>", "</s>", true};

TEST(PlainTemplate, ConcatenatesContents) {
  EXPECT_EQ(render_chat(ChatTemplate::plain, {{"user", "Once upon a time"}}, kSpm), "Once upon a time");
  const Chat chat = {{"system", "Tell a story."}, {"user", "Once"}, {"assistant", "upon a"}, {"user", "time"}};
  EXPECT_EQ(render_chat(ChatTemplate::plain, chat, kSpm), "Tell a story.\nOnce\nupon a\ntime");
  EXPECT_EQ(render_chat(ChatTemplate::plain, chat, {"<s>", "</s>", false}), "Tell a story.\nOnce\nupon a\ntime");
  EXPECT_EQ(render_chat(ChatTemplate::plain, {{"user", " keep  spaces \n"}}, kSpm), " keep  spaces \n");
}

TEST(PlainTemplate, StoriesModelPromptIsTheUserText) {
  const GgufFile f = GgufFile::open(testing::shared_path("models/stories260K.gguf"));
  const ChatTemplate t = chat_template_for(f);
  ASSERT_EQ(t, ChatTemplate::plain);
  const RenderOptions opts = chat_render_options(f);
  const std::string prompt = render_chat(t, {{"user", "Lily saw a cat."}}, opts);
  EXPECT_EQ(prompt, "Lily saw a cat.");
  EXPECT_FALSE(starts_with_bos(prompt, opts));  // so the tokenizer adds its BOS as usual
}

TEST(RenderChat, RejectsUnknownRolesAndEmptyChats) {
  for (ChatTemplate t : kAll) {
    SCOPED_TRACE(std::string(chat_template_name(t)));
    EXPECT_THROW(render_chat(t, {}, kSpm), InvalidArgument);
    try {
      render_chat(t, {{"user", "hi"}, {"ipython", "42"}}, kSpm);
      ADD_FAILURE() << "accepted role 'ipython'";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()), "message 1: unknown role 'ipython' (expected system, user, assistant or tool)");
    }
    try {
      render_chat(t, {{"user", "hi", {{"f", Json::object()}}}}, kSpm);
      ADD_FAILURE() << "accepted tool_calls in a user message";
    } catch (const InvalidArgument& e) {
      EXPECT_STREQ(e.what(), "message 0: only assistant messages have tool_calls");
    }
    EXPECT_THROW(render_chat(t, {{"User", "hi"}}, kSpm), InvalidArgument);  // roles are case-sensitive
  }
}

TEST(RenderChat, AlternationErrorsAreTheTemplatesOwn) {
  const Chat two_users = {{"user", "a"}, {"user", "b"}};
  for (ChatTemplate t : {ChatTemplate::llama2, ChatTemplate::mistral, ChatTemplate::gemma}) {
    try {
      render_chat(t, two_users, kSpm);
      ADD_FAILURE() << chat_template_name(t) << " accepted two user turns in a row";
    } catch (const InvalidArgument& e) {
      EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant/user/assistant/...");
    }
  }
  EXPECT_NO_THROW(render_chat(ChatTemplate::chatml, two_users, kSpm));
  EXPECT_NO_THROW(render_chat(ChatTemplate::llama3, two_users, kSpm));
}

// Jinja in Python (transformers) evaluates `'' != false` as true, so an
// empty system message still gets its <<SYS>> block; @huggingface/jinja
// compares loosely and drops it, which is why the oracle does not cover this.
TEST(RenderChat, Llama2EmptySystemMessageFollowsPython) {
  EXPECT_EQ(render_chat(ChatTemplate::llama2, {{"system", ""}, {"user", "Hi"}}, kSpm),
            "<s>[INST] <<SYS>>\n\n<</SYS>>\n\nHi [/INST]");
}

TEST(RenderChat, StartsWithBos) {
  const Chat chat = {{"user", "Hi"}};
  EXPECT_TRUE(starts_with_bos(render_chat(ChatTemplate::llama2, chat, kSpm), kSpm));
  EXPECT_TRUE(starts_with_bos(render_chat(ChatTemplate::phi3, chat, kSpm), kSpm));
  EXPECT_FALSE(starts_with_bos(render_chat(ChatTemplate::chatml, chat, kSpm), kSpm));
  EXPECT_FALSE(starts_with_bos(render_chat(ChatTemplate::zephyr, chat, kSpm), kSpm));
  const RenderOptions no_bos{"", "</s>", true};
  EXPECT_FALSE(starts_with_bos(render_chat(ChatTemplate::llama2, chat, no_bos), no_bos));
  EXPECT_EQ(render_chat(ChatTemplate::llama2, chat, no_bos), "[INST] Hi [/INST]");
}

// Python's str.strip(): the whitespace set both Jinjas agree on is covered by
// the oracle; these are the characters where only Python's definition counts.
TEST(StripWhitespace, PythonDefinition) {
  EXPECT_EQ(strip_whitespace(" \t\r\n\v\fa b\n "), "a b");
  EXPECT_EQ(strip_whitespace("\u00a0\u2000\u200a\u2028\u2029\u202f\u205f\u3000\u1680x\u3000"), "x");
  EXPECT_EQ(strip_whitespace("\x1c\x1d\x1e\x1fx\x1f"), "x");      // ASCII separators: space to Python
  EXPECT_EQ(strip_whitespace("\u0085x\u0085"), "x");              // NEL
  EXPECT_EQ(strip_whitespace("\ufeffx\ufeff"), "\ufeffx\ufeff");  // BOM is not whitespace (JS disagrees)
  EXPECT_EQ(strip_whitespace("\u200bx\u200b"), "\u200bx\u200b");  // zero-width space is not either
  EXPECT_EQ(strip_whitespace(" \U0001F999 "), "\U0001F999");
  EXPECT_EQ(strip_whitespace(" \n\u3000 "), "");
  EXPECT_EQ(strip_whitespace(""), "");
  // Bytes that are not UTF-8 are text: kept, and they stop the stripping.
  EXPECT_EQ(strip_whitespace(" \xff "), "\xff");
  EXPECT_EQ(strip_whitespace("\xa0x\xa0"), "\xa0x\xa0");    // lone continuation bytes
  EXPECT_EQ(strip_whitespace("x \xe3\x80"), "x \xe3\x80");  // truncated U+3000
  EXPECT_EQ(strip_whitespace("\xc2"), "\xc2");
  EXPECT_EQ(strip_whitespace("\xe3\x80\x80\x80"), "\x80");  // U+3000, then a stray byte
}

TEST(StripWhitespace, TemplatesThatStripUseIt) {
  const Chat chat = {{"user", "\u0085 hi\x1f"}};
  EXPECT_EQ(
      render_chat(ChatTemplate::llama3, chat, kSpm),
      "<s><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatTemplate::gemma, chat, {"<bos>", "<eos>", false}),
            "<bos><start_of_turn>user\nhi<end_of_turn>\n");
  EXPECT_EQ(render_chat(ChatTemplate::llama2, chat, kSpm), "<s>[INST] hi [/INST]");
  // Templates that do not strip keep the content as it is.
  EXPECT_EQ(render_chat(ChatTemplate::mistral, chat, kSpm), "<s>[INST] \u0085 hi\x1f [/INST]");
}

}  // namespace
}  // namespace pagoda
