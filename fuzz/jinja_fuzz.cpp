// libFuzzer target for the Jinja engine: the input is template text, parsed
// and (when it parses) rendered with a small chat context under tight
// limits. Any input must end in a rendered string or a pagoda::Error
// (SyntaxError, RenderError, LimitExceeded): never a crash, a hang, another
// exception type, or output past the limit.
#include <nlohmann/json.hpp>

#include "fuzz_shared.h"
#include "jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda;
  static const auto context = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": "Hi \u00e9"}]},
                 {"role": "assistant", "content": null,
                  "tool_calls": [{"id": "c1", "type": "function",
                                  "function": {"name": "f", "arguments": {"x": 1.5}}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})");
  jinja::Limits limits;
  limits.max_template_bytes = 64 * 1024;
  limits.max_output_bytes = 256 * 1024;
  limits.max_steps = 200'000;
  limits.max_depth = 64;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const jinja::Template t(text, limits);
    const std::string out = t.render(context);
    fuzz::check(out.size() <= limits.max_output_bytes, "output within the limit");
  } catch (const Error&) {
    // A clean refusal.
  }
  return 0;
}
