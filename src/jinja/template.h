// Pagoda's Jinja engine: the chat templates that GGUF files and Hugging Face
// tokenizer configs carry, parsed once and rendered per request.
//
//   jinja::Template t(text);                  // SyntaxError if it does not parse
//   std::string s = t.render(context_json);   // RenderError if it raises
//
// The language is what real chat templates use, with @huggingface/jinja's
// semantics (checked byte for byte against it by tests/chat/corpus_test.cpp):
// if/elif/else, for (loop.*, else, `for x in xs if cond`), set (block form,
// tuples, namespace attributes), macros (defaults, caller, call blocks),
// filter blocks, the filters, tests, methods and globals of filters.cpp and
// builtins.cpp, whitespace control with trim_blocks and lstrip_blocks on (as
// apply_chat_template sets them). See lexer.h, parser.h, eval.h, value.h.
//
// A Template is immutable after construction and may render from several
// threads at once. Limits bound the work of one render, so hostile template
// text ends in LimitExceeded rather than a hang or a crash.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/eval.h"

namespace pagoda::jinja {

class Template {
 public:
  explicit Template(std::string_view text, const Limits& limits = {});

  // context: a JSON object whose members become the template's variables.
  std::string render(const nlohmann::ordered_json& context) const;
  // The source text (a server adapts messages to what a template reads).
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const std::vector<NodePtr>> program_;
  Limits limits_;
};

}  // namespace pagoda::jinja
