// `pagoda chat-template`: prints the prompt a chat renders to, exactly as the
// server renders it (no newline added), so a template can be checked by eye
// or diffed against transformers' apply_chat_template. With --tools it also
// names, on stderr, the tool-call parser `serve` would choose for it.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/template_source.h"
#include "cli/commands.h"
#include "cli/model_option.h"
#include "gguf/file.h"
#include "server/tool_parser_choice.h"
#include "util/error.h"

namespace pagoda::cli {

namespace {

nlohmann::ordered_json read_json_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<InvalidArgument>("{}: cannot read {}", flag, path);
  std::ostringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) fail<InvalidArgument>("{}: {} is not valid JSON", flag, path);
  return j;
}

}  // namespace

Command add_chat_template(CLI::App& app) {
  struct Opts {
    ModelOption model;
    std::string messages, tools, tmpl, kwargs;
    bool no_generation_prompt = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("chat-template", "Print the prompt a chat renders to with the model's chat template");
  o->model.add(cmd);
  cmd->add_option("--messages", o->messages, "JSON file: an array of OpenAI chat messages")->required();
  cmd->add_option("--tools", o->tools, "JSON file: an array of OpenAI tools");
  cmd->add_option("--template", o->tmpl, "A Jinja template file or a built-in name (default: the model file's)");
  cmd->add_flag("--no-generation-prompt", o->no_generation_prompt, "Render without add_generation_prompt");
  cmd->add_option("--kwargs", o->kwargs, "JSON object of extra template variables (chat_template_kwargs)");
  return {cmd, [o] {
            const std::string path = o->model.resolve();
            const auto file = GgufFile::open(path);
            std::optional<std::string> spec;
            if (!o->tmpl.empty()) spec = o->tmpl;
            const SelectedChatTemplate t = select_chat_template(file, spec);
            if (!t.error.empty()) fail<FormatError>("{}", t.error);
            JinjaChatInput in;
            in.messages = read_json_file(o->messages, "--messages");
            if (!in.messages.is_array()) fail<InvalidArgument>("--messages: expected a JSON array of messages");
            if (!o->tools.empty()) in.tools = read_json_file(o->tools, "--tools");
            if (!o->kwargs.empty()) {
              in.kwargs = nlohmann::ordered_json::parse(o->kwargs, nullptr, false);
              if (!in.kwargs.is_object()) fail<InvalidArgument>("--kwargs: expected a JSON object");
            }
            in.add_generation_prompt = !o->no_generation_prompt;
            RenderOptions opts = chat_render_options(file);
            std::string text;
            if (t.jinja) {
              auto jt = t.jinja;
              if (!in.tools.is_null())
                if (auto it = t.variants.find("tool_use"); it != t.variants.end()) jt = it->second;
              text = render_jinja_chat(*jt, in, opts);
            } else {
              opts.add_generation_prompt = in.add_generation_prompt;
              text = render_chat(*t.builtin, chat_messages_from_json(in.messages), opts, in.tools);
            }
            std::fwrite(text.data(), 1, text.size(), stdout);
            // Which parser `serve` would read the answer with; stderr keeps stdout the exact prompt.
            if (!in.tools.is_null())
              std::fprintf(stderr, "\ntool-call parser: %s\n",
                           server::choose_tool_parser("auto", path, spec).how.c_str());
            return 0;
          }};
}

}  // namespace pagoda::cli
