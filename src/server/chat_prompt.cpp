#include "server/chat_prompt.h"

#include "gguf/file.h"
#include "server/tool_results_fold.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagoda::server {

ChatPrompt ChatPrompt::for_model(const std::string& model_path, const std::optional<std::string>& spec) {
  const GgufFile f = GgufFile::open(model_path);
  ChatPrompt p;
  p.selected_ = select_chat_template(f, spec);
  p.options_ = chat_render_options(f);
  p.rerank_ = f.get_string("tokenizer.chat_template.rerank", "");
  return p;
}

std::string ChatPrompt::name() const {
  return selected_.builtin ? std::string(chat_template_name(*selected_.builtin)) : "jinja";
}

RenderedPrompt ChatPrompt::render(const std::vector<ChatTurn>& messages, const Tokenizer& tok) const {
  ChatRenderRequest r;
  r.messages = nlohmann::ordered_json::array();
  for (const auto& m : messages) r.messages.push_back({{"role", m.role}, {"content", m.content}});
  return render(r, tok);
}

RenderedPrompt ChatPrompt::render(const ChatRenderRequest& request, const Tokenizer& tok) const {
  if (!request.messages.is_array() || request.messages.empty()) fail<InvalidArgument>("messages must not be empty");
  RenderedPrompt out;
  std::shared_ptr<const jinja::Template> jinja = selected_.jinja;
  if (request.template_text) {
    try {
      jinja = std::make_shared<const jinja::Template>(*request.template_text);
    } catch (const Error& e) {
      fail<InvalidArgument>("chat_template: {}", e.what());
    }
  } else if (!request.tools.is_null() && !request.tools.empty()) {
    if (auto it = selected_.variants.find("tool_use"); it != selected_.variants.end()) jinja = it->second;
  }
  if (jinja) {
    JinjaChatInput in{request.messages, request.tools, request.add_generation_prompt, request.kwargs};
    if (reads_only_tool_responses(jinja->text())) in.messages = fold_tool_results(in.messages);
    out.text = render_jinja_chat(*jinja, in, options_);
    out.parse_special = true;
  } else if (selected_.builtin) {
    RenderOptions opts = options_;
    opts.add_generation_prompt = request.add_generation_prompt;
    out.text = render_chat(*selected_.builtin, chat_messages_from_json(request.messages), opts, request.tools);
    // Template markers are special tokens; plain text stays plain text.
    out.parse_special = *selected_.builtin != ChatTemplate::plain;
  } else {
    fail<InvalidArgument>("the model's chat template is unusable ({}); pass --chat-template FILE or NAME",
                          selected_.error);
  }
  out.add_bos = tok.add_bos_by_default() && !starts_with_bos(out.text, options_);
  return out;
}

}  // namespace pagoda::server
