// `pagoda chat-template` prints the rendered prompt exactly (no newline
// added): stories260K has no template (the plain fallback), a Jinja file
// given with --template renders with the variables of apply_chat_template,
// and `pagoda info` names where the template comes from.
#include <gtest/gtest.h>

#include <fstream>

#include "testing/build_paths.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

using testing::run_process;

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "pagoda_cli_chat_template_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CliChatTemplate, PrintsThePromptExactly) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  const std::string messages =
      write_temp("messages.json", R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  auto p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "S\nHi");  // plain: contents joined with "\n", nothing after

  const std::string tmpl =
      write_temp("t.jinja",
                 "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<a>"
                 "{% endif %}{{ tools|length if tools else 'no tools' }}{{ '/think' if enable_thinking else '' }}");
  const std::string tools = write_temp("tools.json", R"([{"type": "function", "function": {"name": "f"}}])");
  p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--template", tmpl});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "<system>S<user>Hi<a>no tools");
  p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--template", tmpl,
                   "--no-generation-prompt", "--tools", tools, "--kwargs", R"({"enable_thinking": true})"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "<system>S<user>Hi1/think");
}

// A built-in family renders tools in its layout and names the parser that reads it.
TEST(CliChatTemplate, BuiltInFamiliesRenderToolsAndNameTheirParser) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  const std::string messages = write_temp("m3.json", R"([{"role": "user", "content": "Hi"}])");
  const std::string tools = write_temp("tools3.json", R"([{"type": "function", "function": {"name": "f"}}])");
  auto p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--tools", tools});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(p.out.starts_with("# Tools\n")) << p.out;
  EXPECT_NE(p.out.find("{\"type\": \"function\", \"function\": {\"name\": \"f\"}}"), std::string::npos) << p.out;
  EXPECT_TRUE(p.out.ends_with("<tool_response></tool_response> tags.\nHi")) << p.out;
  EXPECT_NE(p.err.find("tool-call parser: hermes (auto: the built-in plain"), std::string::npos) << p.err;
  p = run_process(
      {PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--tools", tools, "--template", "llama3"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("Environment: ipython\n"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("tool-call parser: llama3_json (auto: the built-in llama3"), std::string::npos) << p.err;
}

TEST(CliChatTemplate, BadTemplatesAreClearErrors) {
  const std::string model = testing::shared_path("models/stories260K.gguf");
  const std::string messages = write_temp("m2.json", R"([{"role": "user", "content": "Hi"}])");
  const std::string broken = write_temp("broken.jinja", "{% if x %}");
  auto p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--template", broken});
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.err.find("endif"), std::string::npos) << p.err;
  const std::string raises = write_temp("raises.jinja", "{{ raise_exception('no way') }}");
  p = run_process({PAGODA_BINARY, "chat-template", "-m", model, "--messages", messages, "--template", raises});
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.err.find("no way"), std::string::npos) << p.err;
}

TEST(CliChatTemplate, InfoNamesTheTemplateSource) {
  auto p = run_process({PAGODA_BINARY, "info", "-m", testing::shared_path("models/stories260K.gguf")});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("chat template:   none in the model file: built-in plain"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("tool parser:     hermes (auto: the built-in plain template's tool layout)"), std::string::npos)
      << p.out;
  p = run_process({PAGODA_BINARY, "info", "-m", testing::shared_path("testdata/tokenizer/ggml-vocab-phi-3.gguf")});
  EXPECT_NE(p.out.find("chat template:   tokenizer.chat_template of the model file"), std::string::npos) << p.out;
}

// An unknown --tool-call-parser stops serve before it listens, listing the names.
TEST(CliChatTemplate, ServeRefusesAnUnknownToolParser) {
  const auto p =
      run_process({"/usr/bin/timeout", "20", PAGODA_BINARY, "serve", "-m",
                   testing::shared_path("models/stories260K.gguf"), "--port", "0", "--tool-call-parser", "nope"});
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.exit_code, 124) << "serve did not refuse the flag";
  EXPECT_NE(p.err.find("hermes, llama3_json, pythonic, mistral, deepseek_v3"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace pagoda
