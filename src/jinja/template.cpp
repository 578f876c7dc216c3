// Template: text -> tokens -> tree once; render walks the tree per call.
#include "jinja/template.h"

#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace pagoda::jinja {

Template::Template(std::string_view text, const Limits& limits) : limits_(limits) {
  if (text.size() > limits.max_template_bytes)
    throw LimitExceeded("template too large: " + std::to_string(text.size()) + " bytes (limit " +
                        std::to_string(limits.max_template_bytes) + ")");
  program_ = std::make_shared<const std::vector<NodePtr>>(parse(tokenize(text), limits.max_depth));
  text_ = text;
}

std::string Template::render(const nlohmann::ordered_json& context) const {
  auto globals = std::make_shared<Scope>();
  install_globals(*globals);
  if (!context.is_null() && !context.is_object()) throw RenderError("template context must be a JSON object");
  if (context.is_object())
    for (const auto& [k, v] : context.items()) globals->set(k, from_json(v));
  Evaluator ev(limits_);
  return ev.render(*program_, globals);
}

}  // namespace pagoda::jinja
